// launch.Options holds only what a caller of New or RunDaemon can set.

package launch

import (
	"reflect"
	"testing"
)

// TestOptionsHaveOnlyFieldsCallersSet: an unexported field of Options is
// one that only this package's tests can set, a hook kept in production
// code for them; the tests inject through what users have (the config)
// or through the package's own functions (runHA's driverMaker).
func TestOptionsHaveOnlyFieldsCallersSet(t *testing.T) {
	typ := reflect.TypeFor[Options]()
	for i := range typ.NumField() {
		if f := typ.Field(i); !f.IsExported() {
			t.Errorf("launch.Options.%s is unexported: only this package's tests can set it", f.Name)
		}
	}
}
