package config

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseScript(t *testing.T) {
	dir := t.TempDir()
	c, err := Parse([]byte(`
[cloud]
driver = "script"
[cloud.script]
create = ["scripts/gce", "create", "--zone=a"]
list = ["/opt/gce", "list"]
destroy = ["gce-destroy"]
set_tags = ["sh", "-c", "exec ./x"]
env = ["PATH", "CLOUDSDK_CONFIG=/etc/gcloud"]
timeout = "90s"
admin_user = "crunch"
`), filepath.Join(dir, "config.toml"))
	if err != nil {
		t.Fatal(err)
	}
	want := ScriptDriver{
		// A relative program with a slash is the config file's; a bare
		// name is looked up in PATH when run.
		Create: []string{filepath.Join(dir, "scripts/gce"), "create", "--zone=a"},
		List:   []string{"/opt/gce", "list"}, Destroy: []string{"gce-destroy"},
		SetTags: []string{"sh", "-c", "exec ./x"},
		Env:     []string{"PATH", "CLOUDSDK_CONFIG=/etc/gcloud"},
		Timeout: 90 * time.Second, AdminUser: "crunch",
	}
	if !reflect.DeepEqual(c.Cloud.Script, want) {
		t.Fatalf("parsed\n%+v\nwant\n%+v", c.Cloud.Script, want)
	}
}

func TestScriptErrors(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      []string
	}{
		{"required", `
[cloud]
driver = "script"
`, []string{
			`config.toml:2: cloud.script.create: required by driver "script"`,
			`config.toml:2: cloud.script.list: required by driver "script"`,
			`config.toml:2: cloud.script.destroy: required by driver "script"`,
		}},
		{"not required by other drivers", `
[cloud]
driver = "local"
`, nil},
		{"values", `
[cloud.script]
create = ["", "create"]
set_tags = ["a\nb"]
env = ["PATH", "1X", "DISPATCH_TUI_VERB=x", "PATH=/bin"]
timeout = "0s"
admin_user = "Root"
`, []string{
			`config.toml:3: cloud.script.create: must start with the program to run`,
			`config.toml:4: cloud.script.set_tags: must not contain a control character`,
			`config.toml:5: cloud.script.env: element 1: "1X" is not NAME or NAME=value`,
			`config.toml:5: cloud.script.env: element 2: DISPATCH_TUI_* variables are set by the dispatcher`,
			`config.toml:5: cloud.script.env: element 3: PATH is also element 0`,
			`config.toml:6: cloud.script.timeout: must be at least 1s`,
			`config.toml:7: cloud.script.admin_user: must be a user name`,
		}},
		{"types", `
[cloud.script]
create = "gce create"
`, []string{
			`config.toml:3: cloud.script.create: must be an array of strings`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.src), "config.toml")
			var got []string
			if err != nil {
				for _, e := range err.(Errors) {
					got = append(got, e.Error())
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d errors, want %d:\n%s", len(got), len(tc.want), strings.Join(got, "\n"))
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tc.want[i]) {
					t.Errorf("error %d:\n got %s\nwant %s...", i, got[i], tc.want[i])
				}
			}
		})
	}
}
