// The values the pool works with, taken from the config.

package worker

import (
	"errors"
	"fmt"
	"time"

	"dispatch-tui/engine/config"
)

// settings are the values the pool works with, taken from the config as
// they are: the config's defaults live in engine/config alone.
type settings struct {
	maxInstances         int // <= 0: unlimited
	runnerPath           string
	bootProbe            string
	timeoutIdle          time.Duration
	timeoutBooting       time.Duration
	timeoutProbe         time.Duration
	timeoutShutdown      time.Duration
	callTimeout          time.Duration // each call of a ready instance's probe
	slowCallTimeout      time.Duration // calls that may install or start the runner
	timeoutUnreachable   time.Duration // 0: never give up on an unreachable instance
	probeInterval        time.Duration
	bootProbeInterval    time.Duration
	syncInterval         time.Duration
	syncSoon             time.Duration
	killGrace            time.Duration
	maxConcurrentCreates int // <= 0: unlimited
	quotaProbeAfter      time.Duration
	capacityBackoff      time.Duration
	maxOutput            int64 // the most of an exited container's output fetched to store
}

// The pool's own tunables, which are not config keys.
const (
	defaultQuotaProbeAfter = time.Minute
	defaultCapacityBackoff = time.Minute
	minSlowCallTimeout     = time.Minute
	// permanentBackoff is how long creates wait after the cloud refused
	// one for a reason retrying will not fix (cloud.PermanentError).
	permanentBackoff = 5 * time.Minute
)

// newSettings reads the pool's settings from c and opts. It reports every
// missing or invalid one, named by its config key.
func newSettings(c *config.Config, opts Options) (settings, error) {
	s := settings{
		maxInstances:         c.Dispatcher.MaxInstances,
		runnerPath:           c.Cloud.RunnerPath,
		bootProbe:            c.Cloud.BootProbeCommand,
		timeoutIdle:          c.Cloud.TimeoutIdle,
		timeoutBooting:       c.Cloud.TimeoutBooting,
		timeoutProbe:         c.Cloud.TimeoutProbe,
		timeoutShutdown:      c.Cloud.TimeoutShutdown,
		callTimeout:          c.Cloud.TimeoutRunnerCall,
		timeoutUnreachable:   c.Cloud.TimeoutUnreachable,
		probeInterval:        c.Cloud.ProbeInterval,
		syncInterval:         c.Cloud.SyncInterval,
		killGrace:            c.Containers.KillGrace,
		maxConcurrentCreates: c.Cloud.MaxConcurrentCreates,
		quotaProbeAfter:      opts.QuotaProbeAfter,
		capacityBackoff:      opts.CapacityBackoff,
		maxOutput:            c.Containers.MaxOutput,
	}
	var errs []error
	if s.runnerPath == "" {
		errs = append(errs, errors.New("cloud.runner_path is empty"))
	}
	if s.maxOutput <= 0 {
		errs = append(errs, errors.New("containers.max_output is not set (it must be positive)"))
	}
	for _, d := range []struct {
		key    string
		v      time.Duration
		zeroOK bool // 0 means "at once" (or, for the options, one minute)
	}{
		{"cloud.timeout_idle", s.timeoutIdle, true},
		{"cloud.timeout_booting", s.timeoutBooting, false},
		{"cloud.timeout_probe", s.timeoutProbe, false},
		{"cloud.timeout_shutdown", s.timeoutShutdown, false},
		{"cloud.timeout_runner_call", s.callTimeout, false},
		{"cloud.timeout_unreachable", s.timeoutUnreachable, true},
		{"cloud.probe_interval", s.probeInterval, false},
		{"cloud.sync_interval", s.syncInterval, false},
		{"containers.kill_grace", s.killGrace, true},
		{"QuotaProbeAfter", s.quotaProbeAfter, true},
		{"CapacityBackoff", s.capacityBackoff, true},
	} {
		switch {
		case d.v < 0:
			errs = append(errs, fmt.Errorf("%s is negative (%s)", d.key, d.v))
		case d.v == 0 && !d.zeroOK:
			errs = append(errs, fmt.Errorf("%s is not set (it must be positive)", d.key))
		}
	}
	if len(errs) > 0 {
		return settings{}, fmt.Errorf("worker: invalid settings: %w", errors.Join(errs...))
	}
	if s.quotaProbeAfter == 0 {
		s.quotaProbeAfter = defaultQuotaProbeAfter
	}
	if s.capacityBackoff == 0 {
		s.capacityBackoff = defaultCapacityBackoff
	}
	if opts.RunnerHash != "" {
		s.runnerPath += "~" + opts.RunnerHash
	}
	// Uploading the runner (tens of MB), starting it the first time and
	// starting containers may take long on a loaded instance; cut short
	// and retried from scratch, they might never finish.
	s.slowCallTimeout = max(s.callTimeout, minSlowCallTimeout)
	s.bootProbeInterval = min(s.probeInterval, time.Second)
	s.syncSoon = min(s.syncInterval, 5*time.Second)
	return s, nil
}
