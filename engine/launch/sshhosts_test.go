package launch

import (
	"reflect"
	"testing"

	"dispatch-tui/engine/config"
)

// Every field of a configured host reaches the driver: sshhosts.Host has
// a field of the same name for each, and sshHosts copies it.
func TestSSHHostsCopiesEveryField(t *testing.T) {
	in := config.SSHHost{Address: "10.0.0.5:22", InstanceType: "small", User: "u", KeyFile: "/k", WorkDir: "/w"}
	got := sshHosts([]config.SSHHost{in})
	if len(got) != 1 {
		t.Fatalf("sshHosts returned %d hosts, want 1", len(got))
	}
	iv, gv := reflect.ValueOf(in), reflect.ValueOf(got[0])
	if iv.NumField() != gv.NumField() {
		t.Fatalf("config.SSHHost has %d fields, sshhosts.Host %d", iv.NumField(), gv.NumField())
	}
	for i := range iv.NumField() {
		name := iv.Type().Field(i).Name
		if iv.Field(i).IsZero() {
			t.Fatalf("the test's host leaves %s empty", name)
		}
		g := gv.FieldByName(name)
		if !g.IsValid() || !reflect.DeepEqual(g.Interface(), iv.Field(i).Interface()) {
			t.Errorf("%s: got %v, want %v", name, g, iv.Field(i))
		}
	}
}
