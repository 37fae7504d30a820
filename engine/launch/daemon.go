// Running the engine as a daemon until its context ends, then stopping it in time.

package launch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// StopTimeout bounds a daemon's shutdown after its context ends.
const StopTimeout = 5 * time.Second

// RunDaemon runs the engine headless, serving the API, until ctx ends; then
// it stops accepting requests, writes its state and exits within
// StopTimeout. Containers keep running on their instances; a restarted
// daemon re-adopts them. A daemon that fails to start leaves no state dir
// it created.
func RunDaemon(ctx context.Context, opts Options) error {
	if err := preflight(&opts.Config.Dispatcher); err != nil {
		return err
	}
	if opts.Config.HA.Enabled {
		return runHA(ctx, opts, NewDriver)
	}
	undo := UndoFreshStateDir(opts.Config.Dispatcher.StateDir)
	r, err := New(opts)
	if err != nil {
		undo()
		return err
	}
	stopAPI, err := Serve(r, opts)
	if err != nil {
		r.Close()
		undo()
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
	return stopWithin(log, func() error {
		// API first (no new verbs), then the engine (state written).
		sctx, cancel := context.WithTimeout(context.Background(), StopTimeout/2)
		defer cancel()
		apiErr := stopAPI(sctx)
		<-done
		return errors.Join(apiErr, r.Close())
	})
}

// stopWithin runs stop, waiting at most StopTimeout for it: a daemon that
// cannot stop in time says so rather than hang.
func stopWithin(log *slog.Logger, stop func() error) error {
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
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
