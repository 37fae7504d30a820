// The checks of [[cloud.sshhosts.host]] and [[instance_type]], and the
// ports of host addresses.

package config

import (
	"net"
	"slices"
	"strconv"
	"strings"

	"dispatch-tui/cloud"
)

func sshhostsNeedHosts(v []SSHHost, s *site) {
	if s.c.Cloud.Driver == "sshhosts" && len(v) == 0 {
		s.bad("driver \"sshhosts\" needs at least one [[cloud.sshhosts.host]]")
	}
}

func hostAddress(v string, s *site) {
	if v == "" {
		s.bad("must not be empty")
		return
	}
	if msg := hostPortProblem(v, 1); msg != "" {
		s.bad("%s", msg)
		return
	}
	for j, h := range s.c.Cloud.SSHHosts.Hosts[:s.i] {
		if h.Address == v {
			s.bad("duplicate address %q (also cloud.sshhosts.host[%d])", v, j)
			return
		}
	}
}

func hostType(v string, s *site) {
	if v == "" {
		s.bad("must not be empty")
		return
	}
	var names []string
	for _, it := range s.c.InstanceTypes {
		if it.Name == v {
			return
		}
		if it.Name != "" && !slices.Contains(names, it.Name) {
			names = append(names, it.Name)
		}
	}
	slices.Sort(names)
	s.bad("unknown instance type %q (known: %s)", v, strings.Join(names, ", "))
}

// withPorts gives every host address without a port cloud.ssh_port, after
// decoding: an address's port defaults to that key.
func withPorts(c *Config) {
	for i := range c.Cloud.SSHHosts.Hosts {
		h := &c.Cloud.SSHHosts.Hosts[i]
		h.Address = withPort(h.Address, c.Cloud.SSHPort)
	}
}

// withPort adds port to an address that has none ("10.0.0.5", "::1",
// "[::1]", "host"). Anything else is returned as is for validation to judge.
func withPort(addr string, port int) string {
	if addr == "" {
		return ""
	}
	if _, _, err := net.SplitHostPort(addr); err == nil {
		return addr
	}
	p := strconv.Itoa(port)
	switch {
	case strings.HasPrefix(addr, "[") && strings.HasSuffix(addr, "]"):
		return net.JoinHostPort(addr[1:len(addr)-1], p)
	case !strings.Contains(addr, ":"), net.ParseIP(addr) != nil:
		return net.JoinHostPort(addr, p)
	}
	return addr
}

func atLeastOneType(v []cloud.InstanceType, s *site) {
	if len(v) == 0 {
		s.bad("at least one [[instance_type]] is required")
	}
}

func typeName(v string, s *site) {
	if v == "" {
		s.bad("must not be empty")
		return
	}
	for j, it := range s.c.InstanceTypes[:s.i] {
		if it.Name == v {
			s.bad("duplicate instance type name %q (also instance_type[%d])", v, j)
			return
		}
	}
}

// providerTypes makes a type's provider_type its name when the file gives
// none, after decoding: that is the key's default.
func (p *parser) providerTypes(c *Config) {
	for i := range c.InstanceTypes {
		it := &c.InstanceTypes[i]
		if it.ProviderType == "" && !p.failed["instance_type["+strconv.Itoa(i)+"].provider_type"] {
			it.ProviderType = it.Name
		}
	}
}
