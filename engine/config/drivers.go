// Driver names: the values cloud.driver takes, and the old names a config
// may still use for one release, read with a warning.

package config

import "fmt"

// Drivers is every value of cloud.driver, in the order messages list them.
var Drivers = []string{"local", "sshhosts", "ec2", "script", "fake"}

// MakesOwnKey reports whether driver logs in to the instances it creates
// with the dispatcher's own key: cloud.ssh_key_file, or else one made and
// kept in the state dir.
func MakesOwnKey(driver string) bool { return driver == "ec2" || driver == "script" }

// oldDriverNames maps a driver's former name to its name now. The fake
// driver was called "cloudtest", like the operator's driver check command
// (engine/cloudcheck), which kept the name.
var oldDriverNames = map[string]string{"cloudtest": "fake"}

// renameOldDrivers replaces an old driver name in c by its name now, so
// that everything past loading sees only Drivers, and returns the warning
// that tells the user to write the new name (no line: the caller knows it).
func (c *Config) renameOldDrivers() []*Error {
	now, ok := oldDriverNames[c.Cloud.Driver]
	if !ok {
		return nil
	}
	old := c.Cloud.Driver
	c.Cloud.Driver = now
	return []*Error{{Key: "cloud.driver", Msg: fmt.Sprintf(
		"%q is the old name of the %q driver, still read in this release only: write driver = %q", old, now, now)}}
}
