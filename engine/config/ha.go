// The [ha] section: several dispatchers on one PostgreSQL store, one of
// them leading (docs/design.md §11), and the checks that make it workable.

package config

import (
	"net"
	"os"
	"strings"
	"time"
	"unicode"

	"dispatch-tui/engine/ha"
)

// HA is the [ha] section.
type HA struct {
	// Enabled makes this dispatcher one node of a cluster: it leads only
	// while it holds the lease in the store.
	Enabled bool
	// NodeName names this node in the lease, events and `ls nodes`;
	// resolved: the hostname when the file gives none.
	NodeName string
	// Advertise is the URL other nodes and forwarded clients reach this
	// node's API at; resolved: from listen when the file gives none ("" while
	// there is no TCP listen).
	Advertise string
	// Lease is how long a leader's lease lasts past its last renewal, on
	// the database's clock.
	Lease time.Duration
	// LeaseRetry is how often a standby tries to take the lease.
	LeaseRetry time.Duration
}

// haKeys is [ha].
var haKeys = []*row{
	commented(boolean("ha.enabled", false, func(c *Config, _ int) *bool { return &c.HA.Enabled },
		"run as one node of a cluster sharing [store] url: lead while holding the lease, else stand by", haNeedsStore, haNeedsListen, haNeedsSharedKey)),
	commented(str("ha.node_name", "", func(c *Config, _ int) *string { return &c.HA.NodeName },
		`this node's name in the lease, events and ls nodes; "" = the hostname`, nodeName)),
	commented(str("ha.advertise", "", func(c *Config, _ int) *string { return &c.HA.Advertise },
		`URL of this node's API for the other nodes and forwarded clients; "" = from listen`, advertiseURL)),
	commented(duration("ha.lease", 5*time.Second, func(c *Config, _ int) *time.Duration { return &c.HA.Lease },
		"how long a leader's lease lasts past its last renewal", leaseLength)),
	commented(duration("ha.lease_retry", time.Second, func(c *Config, _ int) *time.Duration { return &c.HA.LeaseRetry },
		"how often a standby tries to take the lease", leaseRetry)),
}

// resolveHA gives node_name and advertise their defaults, which depend on
// the machine and on listen.
func resolveHA(c *Config) {
	if c.HA.NodeName == "" {
		c.HA.NodeName = hostname()
	}
	if c.HA.Advertise == "" {
		c.HA.Advertise = advertiseFromListen(&c.Dispatcher)
	}
}

// hostname is the machine's name, or "" if it has none to tell.
func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return ""
	}
	return h
}

// advertiseFromListen is the URL clients elsewhere reach listen at: the
// scheme the listener serves (TLS but on loopback under "auto") and, for a
// wildcard address, the hostname.
func advertiseFromListen(d *Dispatcher) string {
	if !tcpListen(d) {
		return ""
	}
	host, port, _ := net.SplitHostPort(d.Listen)
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = hostname()
	}
	scheme := "https"
	if d.TLS == "off" || d.TLS == "auto" && isLoopback(d.Listen) {
		scheme = "http"
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}

func haNeedsStore(on bool, s *site) {
	if on && s.c.Store.URL == "" {
		s.bad("needs [store] url (or url_file, or $%s): the nodes share the queue and the lease in PostgreSQL", StoreURLEnv)
	}
}

// haNeedsListen: standbys forward requests to the leader over TCP, with a
// token (tokenRequired asks for one whenever listen is set).
func haNeedsListen(on bool, s *site) {
	if on && !tcpListen(&s.c.Dispatcher) {
		s.bad("needs [dispatcher] listen on a TCP address (with a token): the other nodes forward requests to the leader there")
	}
}

// haNeedsSharedKey: a node taking over logs in to the instances another
// node created, which authorize only the creator's key; a key made in
// each node's own state dir would lock the others out.
func haNeedsSharedKey(on bool, s *site) {
	if on && MakesOwnKey(s.c.Cloud.Driver) && s.c.Cloud.SSHKeyFile == "" {
		s.bad("needs [cloud] ssh_key_file with driver = %q, the same key on every node: a node taking over logs in to the instances another node created (without it each node makes its own key in its state_dir)", s.c.Cloud.Driver)
	}
}

// MaxNodeNameLen bounds node_name: it travels in every event of the node.
const MaxNodeNameLen = 63

func nodeName(v string, s *site) {
	if !s.c.HA.Enabled {
		return
	}
	switch {
	case v == "":
		s.bad(`must not be empty: this machine has no hostname to default to, so set node_name = "<name>"`)
	case len(v) > MaxNodeNameLen || strings.IndexFunc(v, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		s.bad("must be 1 to %d characters without spaces (got %q)", MaxNodeNameLen, v)
	}
}

func advertiseURL(v string, s *site) {
	if !s.c.HA.Enabled || v == "" {
		return // without listen, haNeedsListen says what to do
	}
	scheme, rest, ok := strings.Cut(v, "://")
	if !ok || scheme != "http" && scheme != "https" {
		s.bad("must be a URL like https://host:port (got %q)", v)
		return
	}
	if msg := hostPortProblem(strings.TrimSuffix(rest, "/"), 1); msg != "" {
		s.bad("%s after %s://", msg, scheme)
	}
}

func leaseLength(v time.Duration, s *site) {
	if v < ha.MinLease {
		s.bad("must be at least %s: a leader stops acting %s before its lease runs out and renews every quarter of it (got %s)", ha.MinLease, ha.Margin, v)
	}
}

func leaseRetry(v time.Duration, s *site) {
	if v <= 0 || v >= s.c.HA.Lease {
		s.bad("must be > 0 and shorter than lease (%s) (got %s)", s.c.HA.Lease, v)
	}
}
