package launch

import (
	"context"
	"fmt"
	"time"
)

// StopTimeout bounds a daemon's shutdown after its context ends.
const StopTimeout = 5 * time.Second

// RunDaemon runs the engine headless until ctx ends, then stops it within
// StopTimeout. Containers keep running on their instances; a restarted
// daemon re-adopts them.
func RunDaemon(ctx context.Context, opts Options) error {
	r, err := New(opts)
	if err != nil {
		return err
	}
	log := opts.Logger
	cfg := opts.Config
	log.Info("daemon started", "driver", cfg.Cloud.Driver, "state_dir", cfg.Dispatcher.StateDir,
		"config", cfg.Path, "instance_types", len(cfg.InstanceTypes))
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Run(ctx)
	}()
	<-ctx.Done()
	log.Info("daemon stopping")
	stopped := make(chan error, 1)
	go func() {
		<-done
		stopped <- r.Close()
	}()
	select {
	case err := <-stopped:
		if err != nil {
			return fmt.Errorf("stop: %w", err)
		}
		log.Info("daemon stopped")
		return nil
	case <-time.After(StopTimeout):
		return fmt.Errorf("stop: gave up after %s", StopTimeout)
	}
}
