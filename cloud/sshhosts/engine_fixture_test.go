package sshhosts

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/engine/config"
)

// engineConfig is what the tests that run an engine on env's hosts share:
// the sshhosts driver over every server, each with a work dir under
// env.dir (where leftover processes are looked for), one "small" type,
// fast probes and listings. Callers adjust it, then build the driver with
// newDriver.
func (env *sshdEnv) engineConfig(t *testing.T) (*config.Config, []Host) {
	t.Helper()
	cfg := config.Default()
	cfg.Dispatcher.StateDir = t.TempDir()
	cfg.Dispatcher.StaleLockTimeout = 5 * time.Second
	cfg.Cloud.Driver = "sshhosts"
	cfg.Cloud.SSHUser = env.user
	cfg.Cloud.SSHKeyFile = env.clientKey
	cfg.Cloud.KnownHosts = env.knownHosts
	cfg.Cloud.RunnerPath = "./dispatch-tui-runner"
	cfg.Cloud.BootProbeCommand = "true"
	cfg.Cloud.ProbeInterval = 200 * time.Millisecond
	cfg.Cloud.SyncInterval = time.Second
	cfg.Cloud.MaxProbesPerSecond = 100
	cfg.Cloud.MaxCloudOpsPerSecond = 100
	cfg.Cloud.MaxConcurrentCreates = len(env.servers)
	cfg.InstanceTypes = []cloud.InstanceType{{Name: "small", ProviderType: "small", VCPUs: 2, RAM: 2 << 30, Scratch: 10 << 30, Price: 0.1}}
	var hosts []Host
	for i, s := range env.servers {
		h := Host{Address: s.addr, InstanceType: "small", WorkDir: filepath.Join(env.dir, "work", fmt.Sprintf("host%d", i))}
		hosts = append(hosts, h)
		cfg.Cloud.SSHHosts.Hosts = append(cfg.Cloud.SSHHosts.Hosts, config.SSHHost{
			Address: h.Address, InstanceType: h.InstanceType, WorkDir: h.WorkDir,
		})
	}
	return cfg, hosts
}

// newDriver validates cfg and builds the driver over hosts, owned by owner
// ("" = the driver's default). At the end of the test it releases every
// host it holds (killing leftovers) while the sshd processes still run.
func newDriver(t *testing.T, cfg *config.Config, hosts []Host, hash, owner string, logger *slog.Logger) *Driver {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatalf("config: %v", err)
	}
	drv, err := New(Options{
		Hosts: hosts, Types: cfg.InstanceTypes,
		DefaultUser: cfg.Cloud.SSHUser, DefaultKeyFile: cfg.Cloud.SSHKeyFile, KnownHosts: cfg.Cloud.KnownHosts,
		RunnerPath: cfg.Cloud.RunnerPath + "~" + hash, Owner: owner,
		Logger: logger,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(drv.Stop)
	t.Cleanup(func() {
		var mine cloud.Tags
		if owner != "" {
			mine = cloud.Tags{cloud.TagOwner: owner}
		}
		insts, _ := drv.Instances(context.Background(), mine)
		for _, inst := range insts {
			if err := inst.Destroy(context.Background()); err != nil {
				t.Logf("cleanup: %v", err)
			}
		}
	})
	return drv
}
