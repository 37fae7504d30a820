// The check of a cluster_id: length and characters a provider's tag accepts.

package config

import "fmt"

// MaxClusterIDLen bounds a cluster_id: it travels in every instance's owner
// tag, and providers limit tag values.
const MaxClusterIDLen = 63

// CheckClusterID reports why id cannot be a cluster_id: 1 to 63 characters
// of [a-z0-9-], starting with a letter or digit. That fits every provider's
// tag values and needs no quoting in a shell line or JSON.
func CheckClusterID(id string) error {
	if id == "" || len(id) > MaxClusterIDLen {
		return fmt.Errorf("must be 1 to %d characters long (got %d)", MaxClusterIDLen, len(id))
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '-' && i > 0:
		default:
			return fmt.Errorf("%q: only lowercase letters, digits and '-' (not first) are allowed", id)
		}
	}
	return nil
}
