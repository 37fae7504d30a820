package config

import (
	"fmt"
	"math"
	"net"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"dispatch-tui/cloud"
	"dispatch-tui/engine/runner"
)

// Validate checks c's values: ranges, enumerations, instance types and
// hosts. Parse and Load already do this (with line numbers); Validate is
// for configs built or changed in code. It returns Errors or nil.
func (c *Config) Validate() error {
	es := c.validate()
	if len(es) == 0 {
		return nil
	}
	for _, e := range es {
		e.File = c.Path
	}
	return Errors(es)
}

// validator collects validation errors; they carry keys, not lines. The
// checks take a pointer to the Config field they check and name it by its
// key from keys.
type validator struct {
	keys keyIndex
	errs []*Error
}

func (v *validator) add(key, format string, args ...any) *Error {
	e := &Error{Key: key, Msg: fmt.Sprintf(format, args...)}
	v.errs = append(v.errs, e)
	return e
}

// addAt records an error about the field ptr points to.
func (v *validator) addAt(ptr any, format string, args ...any) *Error {
	return v.add(v.keys.of(ptr), format, args...)
}

func (v *validator) minInt(n *int, lo int) {
	if *n < lo {
		v.addAt(n, "must be >= %d (got %d)", lo, *n)
	}
}

func (v *validator) intRange(n *int, lo, hi int) {
	if *n < lo || *n > hi {
		v.addAt(n, "must be between %d and %d (got %d)", lo, hi, *n)
	}
}

func (v *validator) minFloat(f *float64, lo float64) {
	if !(*f >= lo) || math.IsInf(*f, 0) {
		v.addAt(f, "must be >= %v (got %v)", lo, *f)
	}
}

func (v *validator) positiveFloat(f *float64) {
	if !(*f > 0) || math.IsInf(*f, 0) {
		v.addAt(f, "must be > 0 (got %v)", *f)
	}
}

func (v *validator) positiveDur(d *time.Duration) {
	if *d <= 0 {
		v.addAt(d, "must be > 0 (got %v)", *d)
	}
}

func (v *validator) nonNegDur(d *time.Duration) {
	if *d < 0 {
		v.addAt(d, "must not be negative (got %v)", *d)
	}
}

func (v *validator) nonEmpty(s *string) {
	if *s == "" {
		v.addAt(s, "must not be empty")
	}
}

// localPath checks a path on this machine that the config names (empty
// allowed): a control character, NUL above all, is no part of a real path
// (a NUL ends the name the kernel sees) and only hides what is named.
func (v *validator) localPath(s *string) {
	if strings.IndexFunc(*s, unicode.IsControl) >= 0 {
		v.addAt(s, "must not contain a control character such as NUL or a newline (got %q): name the path with printable characters", *s)
	}
}

// runnerPath checks a path on the instances. A relative path with a slash
// ("./runner", "bin/runner") works: every command runs in the host's
// work_dir (or the login directory, or a local instance's home). A bare
// name does not: the shell looks it up in $PATH, so the runner would be
// installed in one place and not found in the other on every boot.
func (v *validator) runnerPath(s *string) {
	switch {
	case *s == "":
		v.addAt(s, "must not be empty")
	case !strings.Contains(*s, "/"):
		v.addAt(s, "must be an absolute path, or relative to the work_dir with a slash (\"./%s\"): a bare name is looked up in $PATH, where the runner is not installed (got %q)", *s, *s)
	case strings.ContainsAny(*s, "'\n"):
		v.addAt(s, "must not contain a single quote or newline (got %q)", *s)
	}
}

func (v *validator) oneOf(s *string, allowed ...string) {
	for _, a := range allowed {
		if *s == a {
			return
		}
	}
	q := make([]string, len(allowed))
	for i, a := range allowed {
		q[i] = strconv.Quote(a)
	}
	list := strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
	v.addAt(s, "must be %s (got %q)", list, *s)
}

// hostPort checks a "host:port" address; lowPort is the smallest port
// allowed (0 lets the system choose, for a listen address).
func (v *validator) hostPort(addr *string, lowPort int) bool {
	_, port, err := net.SplitHostPort(*addr)
	if err != nil {
		v.addAt(addr, "must be host:port (got %q)", *addr)
		return false
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < lowPort || n > 65535 {
		v.addAt(addr, "port must be a number between %d and 65535 (got %q)", lowPort, *addr)
		return false
	}
	return true
}

// isLoopback reports whether a listen address only accepts local
// connections.
func isLoopback(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (c *Config) validate() []*Error {
	v := validator{keys: indexKeys(c)}

	d := &c.Dispatcher
	v.validateAccess(d)
	v.nonEmpty(&d.StateDir)
	for _, p := range []*string{&d.StateDir, &d.TLSCert, &d.TLSKey, &c.Cloud.SSHKeyFile, &c.Cloud.KnownHosts} {
		v.localPath(p)
	}
	if d.ClusterID != "" {
		if err := CheckClusterID(d.ClusterID); err != nil {
			v.addAt(&d.ClusterID, "%v", err)
		}
	}
	v.minInt(&d.MaxInstances, 1)
	v.minInt(&d.MaxContainersPerInstance, 0)
	v.minInt(&d.EventRetention, 0)
	v.minFloat(&d.MaxPriceFactor, 1)
	v.oneOf(&d.SchedulerProfile, "pack", "spread")
	v.positiveDur(&d.StaleLockTimeout)
	if d.ReserveExtraRAM < 0 {
		v.addAt(&d.ReserveExtraRAM, "must not be negative (got %d)", d.ReserveExtraRAM)
	}
	if d.MemoryLimit != 0 && d.MemoryLimit < 32*miB {
		v.addAt(&d.MemoryLimit, "must be 0 (no limit) or at least 32MiB (got %d bytes)", d.MemoryLimit)
	}

	if d.SupervisorFraction < 0 || d.SupervisorFraction > 1 {
		v.addAt(&d.SupervisorFraction, "must be between 0 (no limit) and 1 (got %g)", d.SupervisorFraction)
	}

	cl := &c.Cloud
	v.oneOf(&cl.Driver, "local", "sshhosts", "ec2", "script", "cloudtest")
	v.intRange(&cl.SSHPort, 1, 65535)
	v.runnerPath(&cl.RunnerPath)
	v.nonNegDur(&cl.TimeoutIdle)
	v.positiveDur(&cl.TimeoutBooting)
	v.positiveDur(&cl.TimeoutProbe)
	v.positiveDur(&cl.TimeoutRunnerCall)
	v.positiveDur(&cl.TimeoutShutdown)
	v.nonNegDur(&cl.TimeoutUnreachable)
	if cl.TimeoutUnreachable > 0 && cl.TimeoutUnreachable < cl.TimeoutProbe {
		v.addAt(&cl.TimeoutUnreachable, "must be 0 (off) or at least timeout_probe (%s): an instance is given up for failing probes first (got %s)", cl.TimeoutProbe, cl.TimeoutUnreachable)
	}
	v.positiveDur(&cl.ProbeInterval)
	v.positiveDur(&cl.SyncInterval)
	v.positiveFloat(&cl.MaxProbesPerSecond)
	v.positiveFloat(&cl.MaxCloudOpsPerSecond)
	v.minInt(&cl.MaxConcurrentCreates, 1)
	v.nonNegDur(&cl.Local.BootDelay)

	if len(c.InstanceTypes) == 0 {
		v.addAt(&c.InstanceTypes, "at least one [[instance_type]] is required")
	}
	types := map[string]int{} // name → index
	for i := range c.InstanceTypes {
		it := &c.InstanceTypes[i]
		if it.Name == "" {
			v.addAt(&it.Name, "must not be empty")
		} else if j, dup := types[it.Name]; dup {
			v.addAt(&it.Name, "duplicate instance type name %q (also instance_type[%d])", it.Name, j)
		} else {
			types[it.Name] = i
		}
		v.nonEmpty(&it.ProviderType)
		v.minInt(&it.VCPUs, 1)
		if it.RAM <= 0 {
			v.addAt(&it.RAM, "must be > 0 (got %d)", it.RAM)
		}
		if it.Scratch < 0 {
			v.addAt(&it.Scratch, "must not be negative (got %d)", it.Scratch)
		}
		v.minInt(&it.GPUs, 0)
		v.minFloat(&it.Price, 0)
	}
	v.validateLabels(c)

	if cl.Driver == "sshhosts" && len(cl.SSHHosts.Hosts) == 0 {
		e := v.addAt(&cl.SSHHosts.Hosts, "driver \"sshhosts\" needs at least one [[cloud.sshhosts.host]]")
		e.lineKey = v.keys.of(&cl.Driver)
	}
	addrs := map[string]int{} // address → index
	for i := range cl.SSHHosts.Hosts {
		h := &cl.SSHHosts.Hosts[i]
		switch {
		case h.Address == "":
			v.addAt(&h.Address, "must not be empty")
		case !v.hostPort(&h.Address, 1):
		default:
			if j, dup := addrs[h.Address]; dup {
				v.addAt(&h.Address, "duplicate address %q (also cloud.sshhosts.host[%d])", h.Address, j)
			} else {
				addrs[h.Address] = i
			}
		}
		v.localPath(&h.KeyFile)
		if h.InstanceType == "" {
			v.addAt(&h.InstanceType, "must not be empty")
		} else if _, ok := types[h.InstanceType]; !ok {
			names := make([]string, 0, len(types))
			for n := range types {
				names = append(names, n)
			}
			sort.Strings(names)
			v.addAt(&h.InstanceType, "unknown instance type %q (known: %s)", h.InstanceType, strings.Join(names, ", "))
		}
	}

	v.validateEC2(cl)
	v.validateScript(cl)

	ct := &c.Containers
	v.minInt(&ct.MaxAttempts, 1)
	v.nonNegDur(&ct.KillGrace)
	v.minInt(&ct.KeepFinished, 0)
	// Under a KiB nothing would be kept (the cut is in whole KiB); over
	// the runner's limit, one reply could outgrow what a call returns.
	if ct.MaxOutput < runner.OutputCutUnit || ct.MaxOutput > runner.MaxOutputLimit {
		v.addAt(&ct.MaxOutput, "must be between 1KiB and %s (got %s)", FormatSize(runner.MaxOutputLimit), FormatSize(ct.MaxOutput))
	}

	v.store(&c.Store)

	t := &c.TUI
	v.positiveDur(&t.Refresh)
	v.oneOf(&t.Theme, "auto", "dark", "light")
	actions := make([]string, 0, len(t.Keys))
	for a := range t.Keys {
		actions = append(actions, a)
	}
	sort.Strings(actions)
	for _, a := range actions {
		if t.Keys[a] == "" {
			v.add(joinKey(v.keys.of(&t.Keys), a), "must not be empty")
		}
	}
	return v.errs
}

// tokenName is what a token's name may hold: it becomes the actor
// "token:<name>" of the events.
func tokenName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, c := range s {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("_.@-", c)
		if !ok {
			return false
		}
	}
	return true
}

// validateAccess checks who may reach the API: a TCP listener needs a
// token, and off loopback TLS too.
func (v *validator) validateAccess(d *Dispatcher) {
	v.oneOf(&d.TLS, "auto", "on", "off")
	v.minInt(&d.MaxConnections, 1)
	if (d.TLSCert == "") != (d.TLSKey == "") {
		v.addAt(&d.TLSKey, "set both tls_cert and tls_key, or neither (a self-signed pair is made in state_dir)")
	}
	names := map[string]int{}
	values := map[string]int{}
	if d.Token != "" {
		names[DefaultTokenName] = -1
		values[d.Token] = -1
	}
	for i := range d.Tokens {
		t := &d.Tokens[i]
		switch j, dup := names[t.Name]; {
		case !tokenName(t.Name):
			v.addAt(&t.Name, "must be 1 to 64 of A-Z a-z 0-9 _ . @ - (got %q)", t.Name)
		case dup && j < 0:
			v.addAt(&t.Name, "%q is the name of dispatcher.token; pick another", t.Name)
		case dup:
			v.addAt(&t.Name, "duplicate token name %q (also dispatcher.tokens[%d])", t.Name, j)
		default:
			names[t.Name] = i
		}
		v.oneOf(&t.Role, RoleViewer, RoleOperator)
		if t.Token == "" {
			continue
		}
		if _, dup := values[t.Token]; dup {
			v.addAt(&t.Token, "the same secret as another token: each token needs its own")
		} else {
			values[t.Token] = i
		}
	}
	if d.Listen == "" || !v.hostPort(&d.Listen, 0) {
		return
	}
	if len(d.APITokens()) == 0 {
		e := v.addAt(&d.Token, "required when listen is set: TCP clients authenticate with a token (set token, token_file or [[dispatcher.tokens]]; local users can use the socket in state_dir instead)")
		e.lineKey = v.keys.of(&d.Listen)
	}
	if d.TLS == "off" && !isLoopback(d.Listen) {
		e := v.addAt(&d.TLS, "plain HTTP off loopback would send tokens in clear: listen (%s) needs tls = \"auto\" or \"on\"", d.Listen)
		e.lineKey = v.keys.of(&d.TLS)
	}
}

// EBS volume types.
var ebsVolumeTypes = []string{"gp3", "gp2", "io2", "io1", "st1", "sc1", "standard"}

// validateEC2 checks [cloud.ec2]: always its shape, and when the driver is
// "ec2" that what EC2 needs is there.
func (v *validator) validateEC2(cl *Cloud) {
	e := &cl.EC2
	if cl.Driver == "ec2" {
		for _, req := range []*string{&e.Region, &e.ImageID} {
			if *req == "" {
				v.addAt(req, "required by driver \"ec2\"")
			}
		}
	}
	if e.ImageID != "" && !strings.HasPrefix(e.ImageID, "ami-") {
		v.addAt(&e.ImageID, "must be an AMI id like \"ami-0abc...\" (got %q)", e.ImageID)
	}
	if e.Endpoint != "" {
		u, err := url.Parse(e.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			v.addAt(&e.Endpoint, "must be an http(s) URL like \"https://ec2.eu-west-1.amazonaws.com\" (got %q)", e.Endpoint)
		}
	}
	v.idList(&e.SubnetIDs, "subnet-")
	v.idList(&e.SecurityGroupIDs, "sg-")
	if !cloud.PortableUserName(e.AdminUser) {
		v.addAt(&e.AdminUser, "must be a user name: a-z, 0-9, _ and -, starting with a letter or _, at most 32 (got %q)", e.AdminUser)
	}
	if strings.ContainsAny(e.KeyPairName, "\n'") {
		v.addAt(&e.KeyPairName, "must not contain a quote or newline (got %q)", e.KeyPairName)
	}
	if e.RootVolumeSize != 0 && e.RootVolumeSize < giB {
		v.addAt(&e.RootVolumeSize, "must be 0 (the image's size) or at least 1GiB (got %d bytes)", e.RootVolumeSize)
	}
	v.oneOf(&e.RootVolumeType, ebsVolumeTypes...)
	v.oneOf(&e.ScratchVolumeType, ebsVolumeTypes...)
	if !e.IMDSv2Required {
		v.addAt(&e.IMDSv2Required, "the instances' metadata service always requires tokens now (without them containers could read the instance secret): remove this key")
	}
	// EC2 accepts 1 to 64; above 1 a container on a docker bridge gets a
	// metadata token.
	v.intRange(&e.MetadataHopLimit, 1, 64)
	keys := make([]string, 0, len(e.Tags))
	for k := range e.Tags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		key := joinKey(v.keys.of(&e.Tags), k)
		switch {
		case k == "" || len(k) > 128:
			v.add(key, "tag keys must be 1 to 128 characters")
		case strings.HasPrefix(strings.ToLower(k), "aws:"):
			v.add(key, "tag keys starting with aws: are reserved by AWS")
		case strings.HasPrefix(k, "dispatch-tui-"):
			v.add(key, "tag keys starting with dispatch-tui- are the dispatcher's own")
		case len(e.Tags[k]) > 256:
			v.add(key, "tag values must be at most 256 characters")
		}
	}
}

// idList checks a list of AWS ids with the given prefix: none empty, none
// twice.
func (v *validator) idList(ids *[]string, prefix string) {
	seen := map[string]bool{}
	for i, id := range *ids {
		switch {
		case !strings.HasPrefix(id, prefix) || len(id) == len(prefix):
			v.addAt(ids, "element %d must be an id like \"%s0abc...\" (got %q)", i, prefix, id)
		case seen[id]:
			v.addAt(ids, "element %d: %q is listed twice", i, id)
		}
		seen[id] = true
	}
}
