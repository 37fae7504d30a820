package config

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

const examplePath = "../../config.toml.example"

// allRows is the table with the rows of arrays' elements.
func allRows() []*row {
	var out []*row
	for _, r := range table {
		out = append(out, r)
		out = append(out, r.elems...)
	}
	return out
}

// The example is held to the table: it loads to the defaults, shows every
// key of the table (a key with a default set to it, unless the table lets
// the example show it only in a comment), and shows no key, even in a
// comment, that the table lacks.
func TestExampleConfig(t *testing.T) {
	c, err := Load(examplePath)
	if err != nil {
		t.Fatalf("Load(%s):\n%v", examplePath, err)
	}
	def := Default()
	for _, r := range table {
		got, want := reflect.ValueOf(r.at(c, 0)).Elem().Interface(), reflect.ValueOf(r.at(def, 0)).Elem().Interface()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("the example sets %s to %v; its default is %v", r.key, got, want)
		}
	}
	def.Path = examplePath
	if !t.Failed() && !reflect.DeepEqual(c, def) { // e.g. an instance type's key
		t.Errorf("example differs from Default():\n got %+v\nwant %+v", c, def)
	}

	data, err := os.ReadFile(examplePath)
	if err != nil {
		t.Fatal(err)
	}
	shown := exampleKeys(string(data))
	for _, r := range allRows() {
		inComment, ok := shown[r.key]
		mayComment := r.exampleCommented || r.in != nil && r.in.exampleCommented
		switch {
		case !ok:
			t.Errorf("the example does not show %s (%s)", r.key, r.doc)
		case inComment && !mayComment:
			t.Errorf("the example shows %s only in a comment: set it to its default", r.key)
		}
	}
	for k := range shown {
		if _, ok := index.rows[k]; !ok && !inStringMap(k) {
			t.Errorf("the example shows key %s, which the key table lacks", k)
		}
	}
}

// inStringMap reports whether k is an entry of a table of strings
// ([tui.keys] hold = "h").
func inStringMap(k string) bool {
	i := strings.LastIndexByte(k, '.')
	r := index.rows[k[:max(i, 0)]]
	return i > 0 && r != nil && r.kind == kindStringMap
}

var (
	exampleHeader = regexp.MustCompile(`^\[\[?([a-z0-9_.]+)\]\]?$`)
	exampleKey    = regexp.MustCompile(`^([A-Za-z0-9_-]+) = `)
)

// exampleKeys lists the keys and table headers an example file shows,
// each with whether it is only in a comment ("# subnet_ids = [...]"): a
// line that is a TOML key/value, commented or not, or a header. A
// commented header ("# [[cloud.sshhosts.host]]") holds the commented keys
// after it, up to the next line that is not a comment.
func exampleKeys(src string) map[string]bool {
	shown := map[string]bool{}
	note := func(key string, inComment bool) {
		if prev, ok := shown[key]; !ok || prev {
			shown[key] = inComment
		}
	}
	section, commentSection := "", ""
	for _, line := range strings.Split(src, "\n") {
		text := strings.TrimSpace(line)
		inComment := strings.HasPrefix(text, "#")
		if inComment {
			text = strings.TrimSpace(strings.TrimPrefix(text, "#"))
		} else if text != "" {
			commentSection = ""
		}
		if m := exampleHeader.FindStringSubmatch(text); m != nil {
			note(m[1], inComment)
			if inComment {
				commentSection = m[1]
			} else {
				section = m[1]
			}
			continue
		}
		m := exampleKey.FindStringSubmatch(text)
		var v map[string]any
		if m == nil {
			continue
		}
		if _, err := toml.Decode(text, &v); err != nil {
			continue // prose, such as "true = view only"
		}
		in := section
		if inComment && commentSection != "" {
			in = commentSection
		}
		note(strings.TrimPrefix(in+"."+m[1], "."), inComment)
	}
	return shown
}

// The table's own rules: a doc line for every key, keys as the file
// spells them, and the keys of an array's elements below its key.
func TestKeyTable(t *testing.T) {
	spelling := regexp.MustCompile(`^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$`)
	seen := map[string]bool{}
	for _, r := range allRows() {
		if seen[r.key] {
			t.Errorf("%s is in the table twice", r.key)
		}
		seen[r.key] = true
		if r.doc == "" {
			t.Errorf("%s has no doc line", r.key)
		}
		if !spelling.MatchString(r.key) {
			t.Errorf("%s is not a dotted key of lowercase bare names", r.key)
		}
		if r.in != nil && !strings.HasPrefix(r.key, r.in.key+".") {
			t.Errorf("%s is in the array %s but not below its key", r.key, r.in.key)
		}
		if r.kind == kindTables && len(r.elems) == 0 {
			t.Errorf("array of tables %s has no keys", r.key)
		}
	}
}

// Validation names a value by its key, with the index of its element
// below an array of tables.
func TestValidateNamesIndexedKeys(t *testing.T) {
	c := Default()
	c.Path = "mem"
	c.Cloud.Driver = "sshhosts"
	c.Cloud.SSHHosts.Hosts = []SSHHost{
		{Address: "10.0.0.1:22", InstanceType: "small"},
		{InstanceType: "small", KeyFile: "/k\x00"},
	}
	c.InstanceTypes[2].Labels = map[string]string{"a=b": "c"}
	c.TUI.Keys = map[string]string{"hold": ""}
	err := c.Validate()
	want := []string{
		"mem: cloud.sshhosts.host[1].address: must not be empty",
		"mem: cloud.sshhosts.host[1].key_file: must not contain a control character",
		`mem: instance_type[2].labels."a=b": a label key must be non-empty`,
		"mem: tui.keys.hold: must not be empty",
	}
	es, _ := err.(Errors)
	if len(es) != len(want) {
		t.Fatalf("Validate() = %v\nwant %d errors", err, len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(es[i].Error(), w) {
			t.Errorf("error %d = %q, want prefix %q", i, es[i].Error(), w)
		}
	}
	// Defaults are copied, not shared between configs.
	c.InstanceTypes[0].Name = "changed"
	c.Cloud.Script.Env[0] = "changed"
	c.TUI.Keys["kill"] = "x"
	if d := Default(); d.InstanceTypes[0].Name != "small" || d.Cloud.Script.Env[0] != "PATH" || len(d.TUI.Keys) != 0 {
		t.Errorf("Default() shares its defaults with an earlier one: %+v %v %v", d.InstanceTypes[0], d.Cloud.Script.Env, d.TUI.Keys)
	}
}
