// The values the pool works with, read once from the validated config.

package worker

import (
	"fmt"
	"time"

	"dispatch-tui/engine/config"
)

// settings are the values the pool works with, taken from the config as
// they are: the config's defaults and checks live in engine/config alone,
// and Options.Config has passed them (config.Parse, Load or Validate).
type settings struct {
	maxInstances         int // <= 0: unlimited
	runnerPath           string
	epoch                int64 // every runner call's (Options.Epoch)
	bootProbe            string
	timeoutIdle          time.Duration
	timeoutBooting       time.Duration
	timeoutProbe         time.Duration
	timeoutShutdown      time.Duration
	calls                CallTimeouts
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
	// permanentBackoff is how long creates wait after the cloud refused
	// one for a reason retrying will not fix (cloud.PermanentError).
	permanentBackoff = 5 * time.Minute
)

// newSettings reads the pool's settings from c, which it trusts, and opts,
// whose tunables it checks.
func newSettings(c *config.Config, opts Options) (settings, error) {
	for _, o := range []struct {
		name string
		v    time.Duration
	}{{"QuotaProbeAfter", opts.QuotaProbeAfter}, {"CapacityBackoff", opts.CapacityBackoff}} {
		if o.v < 0 {
			return settings{}, fmt.Errorf("worker: Options.%s is negative (%s): use 0 for the default of a minute", o.name, o.v)
		}
	}
	s := settings{
		maxInstances:         c.Dispatcher.MaxInstances,
		runnerPath:           c.Cloud.RunnerPath,
		epoch:                opts.Epoch,
		bootProbe:            c.Cloud.BootProbeCommand,
		timeoutIdle:          c.Cloud.TimeoutIdle,
		timeoutBooting:       c.Cloud.TimeoutBooting,
		timeoutProbe:         c.Cloud.TimeoutProbe,
		timeoutShutdown:      c.Cloud.TimeoutShutdown,
		calls:                CallTimeoutsOf(&c.Cloud),
		timeoutUnreachable:   c.Cloud.TimeoutUnreachable,
		probeInterval:        c.Cloud.ProbeInterval,
		syncInterval:         c.Cloud.SyncInterval,
		killGrace:            c.Containers.KillGrace,
		maxConcurrentCreates: c.Cloud.MaxConcurrentCreates,
		quotaProbeAfter:      opts.QuotaProbeAfter,
		capacityBackoff:      opts.CapacityBackoff,
		maxOutput:            c.Containers.MaxOutput,
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
	s.bootProbeInterval = min(s.probeInterval, time.Second)
	s.syncSoon = min(s.syncInterval, 5*time.Second)
	return s, nil
}
