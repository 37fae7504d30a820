// The configuration of a daemon on the fake driver brought to thousands of
// instances, for the measurements that run one (BENCHMARKS.md).

package enginetest

import "fmt"

// FleetConfig returns a config.toml for a daemon on the fake driver with
// room for instances instances of one type (1 vCPU, 2 GiB), created and
// probed as fast as the in-memory cloud lets, everything else at its
// default (memory_limit included). The state directory, the API's TCP
// address and its token are the caller's. tools/daemon-lib.sh writes the
// same for the shell measurements: keep the two alike.
func FleetConfig(stateDir, listen, token string, instances int) string {
	return fmt.Sprintf(`[dispatcher]
state_dir = %q
listen = %q
token = %q
max_instances = %d

[cloud]
driver = "fake"
max_concurrent_creates = 2000
max_cloud_ops_per_second = 10000
max_probes_per_second = 20000

[[instance_type]]
name = "small"
vcpus = 1
ram = "2GiB"
scratch = "10GiB"
price = 0.05
`, stateDir, listen, token, max(instances, 1))
}
