// What a dispatcher does with [ha] enabled while it cannot run as one node
// of a cluster yet (docs/design.md §11): refuse to start, rather than lead
// alone beside other nodes on the same store.

package launch

import (
	"errors"

	"dispatch-tui/engine/config"
)

// errHANotRun: the elector, the fenced store and the runners' epochs exist,
// but nothing starts the engine only while leading.
var errHANotRun = errors.New("[ha] enabled = true: this dispatch-tui checks [ha] but cannot yet run as one node of a cluster (docs/design.md §11): set enabled = false and run a single dispatcher on the store")

// checkHA refuses a config that asks for HA.
func checkHA(cfg *config.Config) error {
	if cfg.HA.Enabled {
		return errHANotRun
	}
	return nil
}
