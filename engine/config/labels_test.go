package config

import (
	"fmt"
	"strings"
	"testing"
)

// TestLabelAndSupervisorErrors: the label and supervisor keys are checked with the
// line of the offending key.
func TestLabelAndSupervisorErrors(t *testing.T) {
	var many strings.Builder
	for i := range MaxLabelPairs + 1 {
		fmt.Fprintf(&many, "[[instance_type]]\nname = \"t%d\"\nvcpus = 1\nram = \"1GiB\"\nlabels = {k = \"v%d\"}\n", i, i)
	}
	const hosts = `
[cloud]
driver = "sshhosts"
[[cloud.sshhosts.host]]
address = "10.0.0.5"
instance_type = "gpu"
labels = {gpu = "a100"}
[[cloud.sshhosts.host]]
address = "10.0.0.6"
instance_type = "gpu"
%s
[[instance_type]]
name = "gpu"
vcpus = 1
ram = "1GiB"
labels = {gpu = "%s"}
`
	for _, tc := range []struct {
		name, src, want string
	}{
		{"fraction above 1", "[dispatcher]\nsupervisor_fraction = 1.5\n", "config.toml:2: dispatcher.supervisor_fraction: must be between 0 (no limit) and 1"},
		{"fraction negative", "[dispatcher]\nsupervisor_fraction = -0.1\n", "config.toml:2: dispatcher.supervisor_fraction: must be between 0"},
		{"label not a string", "[[instance_type]]\nname = \"a\"\nvcpus = 1\nram = \"1GiB\"\nlabels = {gpu = 1}\n", "config.toml:5: instance_type[0].labels.gpu: must be a string"},
		{"label key with =", "[[instance_type]]\nname = \"a\"\nvcpus = 1\nram = \"1GiB\"\nlabels = {\"a=b\" = \"c\"}\n", `config.toml:5: instance_type[0].labels."a=b": a label key must be non-empty, without "="`},
		{"labels not a table", "[[instance_type]]\nname = \"a\"\nvcpus = 1\nram = \"1GiB\"\nlabels = \"gpu\"\n", "config.toml:5: instance_type[0].labels: must be a table"},
		{"hosts of a type differ", fmt.Sprintf(hosts, `labels = {gpu = "h100"}`, "a100"), `config.toml:10: cloud.sshhosts.host[1].labels: hosts of instance type "gpu" must all have the same labels (this one has gpu=h100, cloud.sshhosts.host[0] has gpu=a100)`},
		{"host label against its type", fmt.Sprintf(hosts, `labels = {gpu = "a100"}`, "v100"), `config.toml:6: cloud.sshhosts.host[0].labels.gpu: is "a100", but instance type "gpu" has gpu = "v100"`},
		{"too many distinct labels", many.String(), "config.toml:1: instance_type: instance types have 63 distinct labels (key=value pairs), at most 62"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(doc(tc.src), "config.toml")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v\nwant an error starting %q", err, tc.want)
			}
		})
	}

	c, err := Parse(doc(fmt.Sprintf(hosts, `labels = {gpu = "a100"}`, "a100")), "config.toml")
	if err != nil {
		t.Fatal(err)
	}
	if got := FormatLabels(c.InstanceTypes[0].Labels); got != "gpu=a100" {
		t.Fatalf("type labels with its hosts' = %s, want gpu=a100", got)
	}
}
