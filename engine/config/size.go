// Durations as the config and the CLI write them (sizes: view.ParseSize).

package config

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

var errNegativeDuration = errors.New("must not be negative")

// ParseDuration parses a Go duration string ("90s", "10m", "1h30m",
// "500ms"). Negative durations are rejected.
func ParseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q: use Go syntax like \"90s\", \"10m\" or \"1h30m\"", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("invalid duration %q: %w", s, errNegativeDuration)
	}
	return d, nil
}
