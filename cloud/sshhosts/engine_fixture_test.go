package sshhosts

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
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

// preinstallRunner puts the runner binary (the file at bin) at runnerPath
// in each host's work dir, as on a host provisioned before the dispatcher
// first reaches it: the dispatcher finds its hash there and installs
// nothing. For the tests that are not about installing: an install sends
// the 78 MB binary through SSH, 2-3 s of CPU per host in sshd and the
// client, most of those tests' CPU. TestEngineOnRealSSHD,
// TestDeletedRunnerRedeployed and TestExitAnnouncedOnSSHHost still install it.
func preinstallRunner(t *testing.T, hosts []Host, runnerPath, bin string) {
	t.Helper()
	for _, h := range hosts {
		if err := os.MkdirAll(h.WorkDir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := copyFile(bin, filepath.Join(h.WorkDir, runnerPath), 0o755); err != nil {
			t.Fatalf("preinstalling the runner: %v", err)
		}
	}
}

// copyFile copies src to a new file dst of mode perm.
func copyFile(src, dst string, perm os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copy %s to %s: %w", src, dst, err)
	}
	return out.Close()
}
