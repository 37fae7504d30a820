package launch

import (
	"reflect"
	"testing"

	"dispatch-tui/engine/config"
)

// Every field of a configured host reaches the driver: sshhosts.Host has
// a field of the same name for each, and sshHosts copies it. Labels are
// the exception: the config merges them into the host's instance type,
// where the scheduler reads them.
func TestSSHHostsCopiesEveryField(t *testing.T) {
	in := config.SSHHost{Address: "10.0.0.5:22", InstanceType: "small", User: "u", KeyFile: "/k", WorkDir: "/w"}
	const mergedIntoType = 1 // Labels
	got := sshHosts([]config.SSHHost{in})
	if len(got) != 1 {
		t.Fatalf("sshHosts returned %d hosts, want 1", len(got))
	}
	iv, gv := reflect.ValueOf(in), reflect.ValueOf(got[0])
	if iv.NumField()-mergedIntoType != gv.NumField() {
		t.Fatalf("config.SSHHost has %d fields, sshhosts.Host %d", iv.NumField(), gv.NumField())
	}
	for i := range iv.NumField() {
		name := iv.Type().Field(i).Name
		if name == "Labels" {
			continue
		}
		if iv.Field(i).IsZero() {
			t.Fatalf("the test's host leaves %s empty", name)
		}
		g := gv.FieldByName(name)
		if !g.IsValid() || !reflect.DeepEqual(g.Interface(), iv.Field(i).Interface()) {
			t.Errorf("%s: got %v, want %v", name, g, iv.Field(i))
		}
	}
}
