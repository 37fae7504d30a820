package config

import "testing"

// Validation names a field by the key its raw struct's toml tag spells.
func TestKeyIndexNamesFields(t *testing.T) {
	c := Default()
	c.Cloud.SSHHosts.Hosts = []SSHHost{{}, {}}
	ki := indexKeys(c)
	for _, tc := range []struct {
		ptr  any
		want string
	}{
		{&c.Dispatcher, "dispatcher"},
		{&c.Dispatcher.Listen, "dispatcher.listen"}, // shares its address with the section
		{&c.Dispatcher.MaxInstances, "dispatcher.max_instances"},
		{&c.Cloud.Local.BootDelay, "cloud.local.boot_delay"},
		{&c.Cloud.SSHHosts.Hosts, "cloud.sshhosts.host"},
		{&c.Cloud.SSHHosts.Hosts[1].WorkDir, "cloud.sshhosts.host[1].work_dir"},
		{&c.InstanceTypes, "instance_type"},
		{&c.InstanceTypes[2].RAM, "instance_type[2].ram"},
		{&c.Containers.KeepFinished, "containers.keep_finished"},
		{&c.Containers.MaxOutput, "containers.max_output"},
		{&c.TUI.Keys, "tui.keys"},
	} {
		if got := ki.of(tc.ptr); got != tc.want {
			t.Errorf("key of %T = %q, want %q", tc.ptr, got, tc.want)
		}
	}
	defer func() {
		if recover() == nil {
			t.Errorf("a pointer outside the Config did not panic")
		}
	}()
	ki.of(new(int))
}
