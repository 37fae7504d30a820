package launch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"dispatch-tui/engine/api"
)

// StopTimeout bounds a daemon's shutdown after its context ends.
const StopTimeout = 5 * time.Second

// Serve starts the management API (and /metrics) on the config's listen
// address. It refuses a non-loopback address without a token. The returned
// function stops accepting and waits for requests in flight (bounded by ctx).
func Serve(r *Running, opts Options) (stop func(context.Context) error, err error) {
	cfg := opts.Config
	if err := api.CheckListen(cfg.Dispatcher.Listen, cfg.Dispatcher.Token); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.Dispatcher.Listen)
	if err != nil {
		return nil, fmt.Errorf("listen on %s (dispatcher.listen): %w", cfg.Dispatcher.Listen, err)
	}
	// Requests run under baseCtx, cancelled on stop, so a long
	// "logs --follow" does not hold the daemon's shutdown.
	baseCtx, cancelRequests := context.WithCancel(context.Background())
	srv := &http.Server{
		Handler: api.NewServer(api.ServerOptions{
			Engine: r.Engine, Token: cfg.Dispatcher.Token, Metrics: r.Metrics.Handler(), Logger: opts.Logger,
		}),
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return baseCtx },
	}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			opts.Logger.Error("api server", "err", err.Error())
		}
	}()
	opts.Logger.Info("api listening", "addr", ln.Addr().String(), "auth", cfg.Dispatcher.Token != "")
	return func(ctx context.Context) error {
		cancelRequests()
		return srv.Shutdown(ctx)
	}, nil
}

// RunDaemon runs the engine headless, serving the API, until ctx ends; then
// it stops accepting requests, writes its state and exits within
// StopTimeout. Containers keep running on their instances; a restarted
// daemon re-adopts them.
func RunDaemon(ctx context.Context, opts Options) error {
	r, err := New(opts)
	if err != nil {
		return err
	}
	stopAPI, err := Serve(r, opts)
	if err != nil {
		r.Close()
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
		// API first (no new verbs), then the engine (state written).
		sctx, cancel := context.WithTimeout(context.Background(), StopTimeout/2)
		defer cancel()
		apiErr := stopAPI(sctx)
		<-done
		stopped <- errors.Join(apiErr, r.Close())
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
