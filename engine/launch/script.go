// The script driver built from [cloud] and [cloud.script].

package launch

// The script driver (cloud/script) from [cloud] and [cloud.script]: the
// cloud drivers do not read the config.

import (
	"fmt"
	"log/slog"

	"dispatch-tui/cloud/script"
	"dispatch-tui/engine/config"
)

func newScript(cfg *config.Config, log *slog.Logger) (*script.Driver, error) {
	signer, err := clientKey(cfg, "script")
	if err != nil {
		return nil, err
	}
	s := cfg.Cloud.Script
	d, err := script.New(script.Options{
		Create: s.Create, List: s.List, Destroy: s.Destroy, SetTags: s.SetTags,
		Env: s.Env, Timeout: s.Timeout, Signer: signer, AdminUser: s.AdminUser,
		SSHPort: cfg.Cloud.SSHPort, Logger: log,
	})
	if err != nil {
		return nil, fmt.Errorf("start script driver: %w", err)
	}
	return d, nil
}
