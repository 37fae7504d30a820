package config

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"dispatch-tui/cloud"
	"dispatch-tui/engine/secretfile"
)

// Find returns the config file to use when --config is absent (docs/design.md §7.1):
// ./dispatch-tui.toml, then $XDG_CONFIG_HOME/dispatch-tui/config.toml
// ($HOME/.config/dispatch-tui/config.toml when XDG_CONFIG_HOME is unset).
// It returns "" and no error when neither exists.
func Find() (path string, err error) {
	candidates := []string{"dispatch-tui.toml"}
	if x := os.Getenv("XDG_CONFIG_HOME"); x != "" && filepath.IsAbs(x) {
		candidates = append(candidates, filepath.Join(x, "dispatch-tui", "config.toml"))
	} else if h, err := os.UserHomeDir(); err == nil && h != "" {
		candidates = append(candidates, filepath.Join(h, ".config", "dispatch-tui", "config.toml"))
	}
	for _, p := range candidates {
		fi, err := os.Stat(p)
		switch {
		case err == nil && fi.IsDir():
			return "", fmt.Errorf("config file %s is a directory", p)
		case err == nil:
			return p, nil
		case errors.Is(err, fs.ErrNotExist):
			continue
		default:
			return "", err
		}
	}
	return "", nil
}

// FindAndLoad loads the file named by --config when explicit is not "";
// otherwise the file Find finds; otherwise it returns Default().
func FindAndLoad(explicit string) (*Config, error) {
	path := explicit
	if path == "" {
		var err error
		if path, err = Find(); err != nil {
			return nil, err
		}
		if path == "" {
			return Default(), nil
		}
	}
	return Load(path)
}

// Load reads and parses the config file at path. A file that holds a
// token (token, or a token of [[dispatcher.tokens]]) must pass
// secretfile.Check: this user's or root's, and private.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c, err := Parse(data, path)
	if err != nil {
		return nil, err
	}
	if c.holdsToken {
		fi, err := os.Stat(path)
		if err != nil {
			return nil, err
		}
		if err := secretfile.Check(path, fi); err != nil {
			return nil, Errors{&Error{File: path, Msg: "holds a token: " + err.Error()}}
		}
	}
	return c, nil
}

// Parse parses a config file's contents over the built-in defaults and
// validates the result. path is used in error messages, to resolve relative
// file paths in the config, and is recorded in Config.Path; it may be "".
//
// On failure the error is an Errors value holding every problem found, each
// tied to its line.
func Parse(data []byte, path string) (*Config, error) {
	file := path
	if file == "" {
		file = "<config>"
	}
	src := string(data)

	// Pass 1: syntax, and the shape of the tables (a section given as a
	// number would stop the typed decode at its first problem).
	var generic map[string]any
	md, err := toml.Decode(src, &generic)
	if err != nil {
		return nil, Errors{syntaxError(file, err)}
	}
	p := &parser{file: file, loc: locate(src), failed: map[string]bool{}}
	p.checkShape(rawFileType, generic, "")
	if len(p.errs) > 0 {
		p.unknownKeys(md.Keys(), nil)
		return nil, p.result()
	}

	// Pass 2: decode into the raw structs; every leaf is a value, so this
	// does not fail on a bad value, and conversion reports them all.
	var raw rawFile
	md, err = toml.Decode(src, &raw)
	if err != nil {
		e := syntaxError(file, err)
		p.errs = append(p.errs, e)
		return nil, p.result()
	}
	p.unknownKeys(md.Keys(), md.Undecoded())

	c := Default()
	c.Path = path
	dir := ""
	if path != "" {
		dir = filepath.Dir(path)
	}
	p.convert(&raw, c, dir, md.IsDefined("instance_type"))
	c.holdsToken = raw.Dispatcher.Token.nonEmptyString()
	for _, t := range raw.Dispatcher.Tokens {
		c.holdsToken = c.holdsToken || t.Token.nonEmptyString()
	}
	for _, e := range c.validate() {
		if p.failed[e.Key] {
			continue
		}
		e.File = file
		if n, ok := p.loc.byPath[e.Key]; ok {
			e.Line = n
		} else if e.lineKey != "" {
			e.Line = p.loc.line(e.lineKey)
		} else {
			e.Line = p.loc.line(e.Key)
		}
		p.errs = append(p.errs, e)
	}
	if len(p.errs) > 0 {
		return nil, p.result()
	}
	sortInstanceTypes(c.InstanceTypes)
	return c, nil
}

func syntaxError(file string, err error) *Error {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		return &Error{File: file, Line: pe.Position.Line, Msg: "invalid TOML: " + pe.Message}
	}
	return &Error{File: file, Msg: "invalid TOML: " + strings.TrimPrefix(err.Error(), "toml: ")}
}

// value holds one raw TOML value of any type. Converting it to its Go type
// happens after decoding, so that one bad value does not hide the others.
type value struct {
	v   any
	set bool
}

func (x value) nonEmptyString() bool {
	s, ok := x.v.(string)
	return ok && s != ""
}

// UnmarshalTOML implements toml.Unmarshaler.
func (x *value) UnmarshalTOML(v any) error {
	x.v, x.set = v, true
	return nil
}

// The raw structs mirror the file. Their toml tags are the key names of
// docs/design.md §7.4; unknownKeys also uses them as the schema of known keys.
type rawFile struct {
	Dispatcher    rawDispatcher     `toml:"dispatcher"`
	Cloud         rawCloud          `toml:"cloud"`
	InstanceTypes []rawInstanceType `toml:"instance_type"`
	Containers    rawContainers     `toml:"containers"`
	TUI           rawTUI            `toml:"tui"`
	Store         rawStore          `toml:"store"`
}

type rawDispatcher struct {
	Listen                   value      `toml:"listen"`
	Token                    value      `toml:"token"`
	TokenFile                value      `toml:"token_file"`
	Tokens                   []rawToken `toml:"tokens"`
	SocketGroup              value      `toml:"socket_group"`
	TLS                      value      `toml:"tls"`
	TLSCert                  value      `toml:"tls_cert"`
	TLSKey                   value      `toml:"tls_key"`
	MaxConnections           value      `toml:"max_connections"`
	StateDir                 value      `toml:"state_dir"`
	ClusterID                value      `toml:"cluster_id"`
	MaxInstances             value      `toml:"max_instances"`
	MaxContainersPerInstance value      `toml:"max_containers_per_instance"`
	MaxPriceFactor           value      `toml:"max_price_factor"`
	SchedulerProfile         value      `toml:"scheduler_profile"`
	StaleLockTimeout         value      `toml:"stale_lock_timeout"`
	ReserveExtraRAM          value      `toml:"reserve_extra_ram"`
	MemoryLimit              value      `toml:"memory_limit"`
	EventRetention           value      `toml:"event_retention"`
	SupervisorFraction       value      `toml:"supervisor_fraction"`
}

type rawToken struct {
	Name      value `toml:"name"`
	Role      value `toml:"role"`
	Token     value `toml:"token"`
	TokenFile value `toml:"token_file"`
}

type rawCloud struct {
	Driver               value       `toml:"driver"`
	SSHUser              value       `toml:"ssh_user"`
	SSHKeyFile           value       `toml:"ssh_key_file"`
	SSHPort              value       `toml:"ssh_port"`
	KnownHosts           value       `toml:"known_hosts"`
	RunnerPath           value       `toml:"runner_path"`
	BootProbeCommand     value       `toml:"boot_probe_command"`
	TimeoutIdle          value       `toml:"timeout_idle"`
	TimeoutBooting       value       `toml:"timeout_booting"`
	TimeoutProbe         value       `toml:"timeout_probe"`
	TimeoutRunnerCall    value       `toml:"timeout_runner_call"`
	TimeoutShutdown      value       `toml:"timeout_shutdown"`
	TimeoutUnreachable   value       `toml:"timeout_unreachable"`
	ProbeInterval        value       `toml:"probe_interval"`
	SyncInterval         value       `toml:"sync_interval"`
	MaxProbesPerSecond   value       `toml:"max_probes_per_second"`
	MaxCloudOpsPerSecond value       `toml:"max_cloud_ops_per_second"`
	MaxConcurrentCreates value       `toml:"max_concurrent_creates"`
	Local                rawLocal    `toml:"local"`
	SSHHosts             rawSSHHosts `toml:"sshhosts"`
	Script               rawScript   `toml:"script"`

	EC2 rawEC2 `toml:"ec2"`
}

type rawEC2 struct {
	Region             value            `toml:"region"`
	Profile            value            `toml:"profile"`
	Endpoint           value            `toml:"endpoint"`
	ImageID            value            `toml:"image_id"`
	SubnetIDs          value            `toml:"subnet_ids"`
	SecurityGroupIDs   value            `toml:"security_group_ids"`
	KeyPairName        value            `toml:"key_pair_name"`
	AdminUser          value            `toml:"admin_user"`
	RootVolumeSize     value            `toml:"root_volume_size"`
	RootVolumeType     value            `toml:"root_volume_type"`
	ScratchVolumeType  value            `toml:"scratch_volume_type"`
	IAMInstanceProfile value            `toml:"iam_instance_profile"`
	Tags               map[string]value `toml:"tags"`
	UsePrivateIP       value            `toml:"use_private_ip"`
	IMDSv2Required     value            `toml:"imdsv2_required"`
	MetadataHopLimit   value            `toml:"metadata_hop_limit"`
}

type rawLocal struct {
	BootDelay value `toml:"boot_delay"`
}

type rawSSHHosts struct {
	Hosts []rawSSHHost `toml:"host"`
}

type rawSSHHost struct {
	Address      value `toml:"address"`
	InstanceType value `toml:"instance_type"`
	User         value `toml:"user"`
	KeyFile      value `toml:"key_file"`
	WorkDir      value `toml:"work_dir"`

	// A table of strings (see config.toml.example).
	Labels map[string]value `toml:"labels"`
}

type rawInstanceType struct {
	Name         value `toml:"name"`
	ProviderType value `toml:"provider_type"`
	VCPUs        value `toml:"vcpus"`
	RAM          value `toml:"ram"`
	Scratch      value `toml:"scratch"`
	GPUs         value `toml:"gpus"`
	Price        value `toml:"price"`
	Preemptible  value `toml:"preemptible"`

	// A table of strings (see config.toml.example).
	Labels map[string]value `toml:"labels"`
}

type rawContainers struct {
	MaxAttempts  value `toml:"max_attempts"`
	KillGrace    value `toml:"kill_grace"`
	KeepFinished value `toml:"keep_finished"`
	MaxOutput    value `toml:"max_output"`

	AlwaysUsePreemptible value `toml:"always_use_preemptible"`
}

type rawStore struct {
	URL     value `toml:"url"`
	URLFile value `toml:"url_file"`
}

type rawTUI struct {
	Refresh  value            `toml:"refresh"`
	Theme    value            `toml:"theme"`
	ReadOnly value            `toml:"read_only"`
	Keys     map[string]value `toml:"keys"`
}

var (
	rawFileType = reflect.TypeOf(rawFile{})
	valueType   = reflect.TypeOf(value{})
)

func tagName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
	return name
}

// fieldFor finds the field of struct type t that the TOML key names: the
// one spelled exactly so, or else (as the decoder does) one whose name
// matches ignoring case. exact reports which.
func fieldFor(t reflect.Type, key string) (f reflect.StructField, exact, ok bool) {
	for i := 0; i < t.NumField(); i++ {
		if tagName(t.Field(i)) == key {
			return t.Field(i), true, true
		}
	}
	for i := 0; i < t.NumField(); i++ {
		if strings.EqualFold(tagName(t.Field(i)), key) {
			return t.Field(i), false, true
		}
	}
	return reflect.StructField{}, false, false
}

// parser collects the errors of one Parse.
type parser struct {
	file   string
	loc    *locator
	errs   Errors
	failed map[string]bool // keys whose value could not be converted
}

func (p *parser) result() error {
	sortErrors(p.errs)
	return p.errs
}

// errAt records an error about key (an indexed path), at the key's line.
func (p *parser) errAt(key, format string, args ...any) {
	p.errs = append(p.errs, &Error{File: p.file, Line: p.loc.line(key), Key: key, Msg: fmt.Sprintf(format, args...)})
}

// fail records that key's value is unusable; validation then stays quiet
// about that key.
func (p *parser) fail(key, format string, args ...any) {
	p.failed[key] = true
	p.errAt(key, format, args...)
}

func joinKey(path, key string) string {
	k := toml.Key{key}.String()
	if path == "" {
		return k
	}
	return path + "." + k
}

// checkShape checks that every table, array of tables and map of the schema
// t has that shape in the generic decode v.
func (p *parser) checkShape(t reflect.Type, v any, path string) {
	switch {
	case t == valueType:
	case t.Kind() == reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			p.fail(path, "must be a table (got %s)", tomlType(v))
			return
		}
		for _, k := range sortedKeys(m) {
			if f, _, ok := fieldFor(t, k); ok {
				p.checkShape(f.Type, m[k], joinKey(path, k))
			}
		}
	case t.Kind() == reflect.Slice:
		var elems []any
		switch a := v.(type) {
		case []map[string]any:
			for _, e := range a {
				elems = append(elems, e)
			}
		case []any:
			elems = a
		default:
			p.fail(path, "must be an array of tables, written [[%s]] (got %s)", path, tomlType(v))
			return
		}
		for i, e := range elems {
			p.checkShape(t.Elem(), e, fmt.Sprintf("%s[%d]", path, i))
		}
	case t.Kind() == reflect.Map:
		if _, ok := v.(map[string]any); !ok {
			p.fail(path, "must be a table (got %s)", tomlType(v))
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// unknownKeys reports every key of the document that the schema does not
// know: those the decoder left undecoded, and those it matched only by
// ignoring case. Keys under an unknown key are not reported again.
func (p *parser) unknownKeys(keys, undecoded []toml.Key) {
	und := make(map[string]bool, len(undecoded))
	for _, k := range undecoded {
		und[k.String()] = true
	}
	seen := map[string]int{}
	reported := map[string]bool{}
	for _, k := range keys {
		s := k.String()
		n := seen[s]
		seen[s]++
		known, hint := schemaKnows(k)
		if known && !und[s] {
			continue
		}
		under := false
		for j := 1; j < len(k) && !under; j++ {
			under = reported[k[:j].String()]
		}
		if under {
			continue
		}
		reported[s] = true
		msg := "unknown key " + s
		if hint != "" {
			msg += " (did you mean " + hint + "?)"
		}
		p.errs = append(p.errs, &Error{File: p.file, Line: p.loc.plainLine(s, n), Msg: msg})
	}
}

// schemaKnows reports whether the key, spelled exactly so, is one of
// rawFile's. Keys below a value (which then has the wrong type, reported on
// conversion) or inside [tui.keys] count as known. For an unknown key it
// suggests a close known one, if any.
func schemaKnows(k toml.Key) (known bool, hint string) {
	t := rawFileType
	for i, piece := range k {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || t == valueType {
			return true, ""
		}
		f, exact, ok := fieldFor(t, piece)
		if !ok || !exact {
			return false, suggest(t, k[:i], piece)
		}
		t = f.Type
	}
	return true, ""
}

// suggest returns the known key in struct t closest to piece, if close.
func suggest(t reflect.Type, parent toml.Key, piece string) string {
	best, bestDist := "", 3
	for i := 0; i < t.NumField(); i++ {
		name := tagName(t.Field(i))
		d := editDistance(strings.ToLower(piece), name)
		if d < bestDist {
			best, bestDist = name, d
		}
	}
	if best == "" {
		return ""
	}
	return append(append(toml.Key{}, parent...), best).String()
}

// editDistance is the Levenshtein distance between a and b, capped for
// long inputs.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		if a == b {
			return 0
		}
		return 64
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func tomlType(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case int64:
		return "integer"
	case float64:
		return "float"
	case bool:
		return "boolean"
	case time.Time:
		return "date-time"
	case []any, []map[string]any:
		return "array"
	case map[string]any:
		return "table"
	case nil:
		return "nothing"
	}
	return fmt.Sprintf("%T", v)
}

// Conversions of raw values. Each leaves dst alone when the key is absent
// or its value is bad (then it records an error).

func (p *parser) str(key string, v value, dst *string) {
	if !v.set {
		return
	}
	s, ok := v.v.(string)
	if !ok {
		p.fail(key, "must be a string (got %s)", tomlType(v.v))
		return
	}
	*dst = s
}

func (p *parser) strList(key string, v value, dst *[]string) {
	if !v.set {
		return
	}
	a, ok := v.v.([]any)
	if !ok {
		p.fail(key, "must be an array of strings like [\"a\", \"b\"] (got %s)", tomlType(v.v))
		return
	}
	out := make([]string, 0, len(a))
	for i, e := range a {
		s, ok := e.(string)
		if !ok {
			p.fail(key, "element %d must be a string (got %s)", i, tomlType(e))
			return
		}
		out = append(out, s)
	}
	*dst = out
}

func (p *parser) integer(key string, v value, dst *int) {
	if !v.set {
		return
	}
	n, ok := v.v.(int64)
	if !ok {
		p.fail(key, "must be an integer (got %s)", tomlType(v.v))
		return
	}
	if int64(int(n)) != n {
		p.fail(key, "out of range (got %d)", n)
		return
	}
	*dst = int(n)
}

func (p *parser) number(key string, v value, dst *float64) {
	if !v.set {
		return
	}
	var f float64
	switch x := v.v.(type) {
	case int64:
		f = float64(x)
	case float64:
		f = x
	default:
		p.fail(key, "must be a number (got %s)", tomlType(v.v))
		return
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		p.fail(key, "must be a finite number (got %v)", f)
		return
	}
	*dst = f
}

func (p *parser) boolean(key string, v value, dst *bool) {
	if !v.set {
		return
	}
	b, ok := v.v.(bool)
	if !ok {
		p.fail(key, "must be true or false (got %s)", tomlType(v.v))
		return
	}
	*dst = b
}

func (p *parser) size(key string, v value, dst *int64) {
	if !v.set {
		return
	}
	switch x := v.v.(type) {
	case int64:
		if x < 0 {
			p.fail(key, "must not be negative (got %d)", x)
			return
		}
		*dst = x
	case string:
		n, err := ParseSize(x)
		if err != nil {
			p.fail(key, "%v", err)
			return
		}
		*dst = n
	default:
		p.fail(key, "must be a size like \"2GiB\" or a number of bytes (got %s)", tomlType(v.v))
	}
}

func (p *parser) duration(key string, v value, dst *time.Duration) {
	if !v.set {
		return
	}
	s, ok := v.v.(string)
	if !ok {
		p.fail(key, "must be a duration string like \"90s\" or \"10m\" (got %s)", tomlType(v.v))
		return
	}
	d, err := ParseDuration(s)
	if err != nil {
		p.fail(key, "%v", err)
		return
	}
	*dst = d
}

// localPath resolves a local file path from the config: "~/" is the home
// directory, and a relative path is relative to the config file's directory.
func localPath(dir, s string) string {
	if s == "" {
		return ""
	}
	if rest, ok := strings.CutPrefix(s, "~/"); ok {
		if h, err := os.UserHomeDir(); err == nil && h != "" {
			return filepath.Join(h, rest)
		}
	}
	if filepath.IsAbs(s) || dir == "" {
		return s
	}
	return filepath.Join(dir, s)
}

// maxTokenFile bounds what is read from token_file (or url_file).
const maxTokenFile = 64 << 10

func readToken(path string) (string, error) { return readSecret(path, "token") }

// readSecret reads a secret (what: "token") from a private file.
func readSecret(path, what string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("cannot read %s: %v", what, err)
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("cannot read %s: %s is not a regular file", what, path)
	}
	if err := secretfile.Check(path, fi); err != nil {
		return "", err
	}
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("cannot read %s: %v", what, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxTokenFile+1))
	if err != nil {
		return "", fmt.Errorf("cannot read %s: %v", what, err)
	}
	if len(data) > maxTokenFile {
		return "", fmt.Errorf("cannot read %s: %s is larger than %s", what, path, FormatSize(maxTokenFile))
	}
	tok := strings.TrimSpace(string(data))
	if tok == "" {
		return "", fmt.Errorf("%s file %s is empty", what, path)
	}
	return tok, nil
}

// token reads a token from its file (section.token_file), if set; the
// token then holds the file's contents.
func (p *parser) token(section, dir string, tok, file *string) {
	switch {
	case *tok != "" && *file != "":
		p.fail(section+".token_file", "set token or token_file, not both")
	case *file != "":
		*file = localPath(dir, *file)
		t, err := readToken(*file)
		if err != nil {
			p.fail(section+".token_file", "%v", err)
			p.failed[section+".token"] = true
		}
		*tok = t
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

// convert copies the raw values over the defaults in c. dir is the config
// file's directory; hasTypes tells whether the file has instance types
// (which then replace the built-in ones).
func (p *parser) convert(r *rawFile, c *Config, dir string, hasTypes bool) {
	p.convertFields("", reflect.ValueOf(r).Elem(), reflect.ValueOf(c).Elem())

	d := &c.Dispatcher
	if d.StateDir == "" {
		d.StateDir = DefaultStateDir()
	} else {
		d.StateDir = localPath(dir, d.StateDir)
	}
	p.token("dispatcher", dir, &d.Token, &d.TokenFile)
	d.TLSCert = localPath(dir, d.TLSCert)
	d.TLSKey = localPath(dir, d.TLSKey)
	d.Tokens = nil
	for i := range r.Dispatcher.Tokens {
		k := fmt.Sprintf("dispatcher.tokens[%d]", i)
		var t APIToken
		p.convertFields(k, reflect.ValueOf(&r.Dispatcher.Tokens[i]).Elem(), reflect.ValueOf(&t).Elem())
		if t.Role == "" && !p.failed[k+".role"] {
			t.Role = RoleViewer
		}
		if t.Token == "" && t.TokenFile == "" && !p.failed[k+".token"] && !p.failed[k+".token_file"] {
			p.fail(k+".token_file", "set token_file (or token)")
		}
		p.token(k, dir, &t.Token, &t.TokenFile)
		d.Tokens = append(d.Tokens, t)
	}

	p.storeURL(&c.Store, dir)

	cl := &c.Cloud
	cl.SSHKeyFile = localPath(dir, cl.SSHKeyFile)
	cl.KnownHosts = localPath(dir, cl.KnownHosts)
	resolveScriptPaths(&cl.Script, dir)
	cl.SSHHosts.Hosts = nil
	for i := range r.Cloud.SSHHosts.Hosts {
		var h SSHHost
		p.convertFields(fmt.Sprintf("cloud.sshhosts.host[%d]", i),
			reflect.ValueOf(&r.Cloud.SSHHosts.Hosts[i]).Elem(), reflect.ValueOf(&h).Elem())
		h.Address = withPort(h.Address, cl.SSHPort)
		h.KeyFile = localPath(dir, h.KeyFile)
		h.Labels = p.labels(fmt.Sprintf("cloud.sshhosts.host[%d].labels", i), r.Cloud.SSHHosts.Hosts[i].Labels)
		cl.SSHHosts.Hosts = append(cl.SSHHosts.Hosts, h)
	}

	if len(r.Cloud.EC2.Tags) > 0 {
		tags := make(map[string]string, len(r.Cloud.EC2.Tags))
		for _, k := range sortedKeys(r.Cloud.EC2.Tags) {
			key := joinKey("cloud.ec2.tags", k)
			var val string
			p.str(key, r.Cloud.EC2.Tags[k], &val)
			if !p.failed[key] {
				tags[k] = val
			}
		}
		cl.EC2.Tags = tags
	}

	if hasTypes {
		c.InstanceTypes = make([]cloud.InstanceType, 0, len(r.InstanceTypes))
		for i := range r.InstanceTypes {
			k := fmt.Sprintf("instance_type[%d]", i)
			var it cloud.InstanceType
			p.convertFields(k, reflect.ValueOf(&r.InstanceTypes[i]).Elem(), reflect.ValueOf(&it).Elem())
			if it.ProviderType == "" && !p.failed[k+".provider_type"] {
				it.ProviderType = it.Name
			}
			it.Labels = p.labels(k+".labels", r.InstanceTypes[i].Labels)
			c.InstanceTypes = append(c.InstanceTypes, it)
		}
	}

	p.mergeHostLabels(c)

	t, rt := &c.TUI, &r.TUI
	for _, action := range sortedKeys(rt.Keys) {
		k := joinKey("tui.keys", action)
		var key string
		p.str(k, rt.Keys[action], &key)
		if !p.failed[k] {
			t.Keys[action] = key
		}
	}
}

// convertFields converts every value field of the raw struct raw, and of
// the raw structs inside it, onto the field of dst with the same Go name,
// by that field's type. path is raw's dotted key; the keys below it come
// from the toml tags, which are thus the only spelling of a key. Arrays of
// tables and maps are left to the caller.
func (p *parser) convertFields(path string, raw, dst reflect.Value) {
	for i := 0; i < raw.NumField(); i++ {
		f := raw.Type().Field(i)
		df := dst.FieldByName(f.Name)
		if !df.IsValid() {
			panic(fmt.Sprintf("config: raw field %s has no counterpart in %s", f.Name, dst.Type()))
		}
		key := joinKey(path, tagName(f))
		switch {
		case f.Type == valueType:
			p.convertValue(key, raw.Field(i).Interface().(value), df)
		case f.Type.Kind() == reflect.Struct:
			p.convertFields(key, raw.Field(i), df)
		}
	}
}

// convertValue converts v to dst's type: a time.Duration is a duration,
// an int64 a size, and the other types are what they say.
func (p *parser) convertValue(key string, v value, dst reflect.Value) {
	switch ptr := dst.Addr().Interface().(type) {
	case *string:
		p.str(key, v, ptr)
	case *int:
		p.integer(key, v, ptr)
	case *float64:
		p.number(key, v, ptr)
	case *bool:
		p.boolean(key, v, ptr)
	case *int64:
		p.size(key, v, ptr)
	case *time.Duration:
		p.duration(key, v, ptr)
	case *[]string:
		p.strList(key, v, ptr)
	default:
		panic(fmt.Sprintf("config: %s: no conversion to %s", key, dst.Type()))
	}
}
