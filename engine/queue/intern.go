// One copy in memory of the values records repeat: names, commands,
// images, labels, environments and constraints.

package queue

import (
	"encoding/binary"
	"slices"
	"sync"
)

// A queue of a million containers is mostly a few specs submitted many
// times over, yet each record had its own labels map (~350 bytes for one
// label), command slice and strings: a third of the daemon's live heap at a
// million (BENCHMARKS.md, helper mem). Records keep their maps, command
// slices and Preemptible read only — a view copies them (Container.view),
// a change replaces them — so records with equal values can share one.

// internMax is how many distinct values of a kind the table keeps before
// it starts over: a queue whose values are all different (a name per
// container) then holds at most this many extra keys, not a second copy
// of each.
const internMax = 1 << 14

// preemptibleYes and preemptibleNo are what every record's
// Scheduling.Preemptible points at (never written through).
var preemptibleYes, preemptibleNo = true, false

// interner holds the shared copies. It is its own owner (mu): records are
// interned on submit, outside the queue's lock, and by a load.
type interner struct {
	mu   sync.Mutex
	strs map[string]string
	cmds map[string][]string
	maps map[string]map[string]string
	key  []byte   // scratch: a command's or a map's key
	keys []string // scratch: a map's keys, sorted
}

// record makes c's repeated values the shared copies. c's maps and
// command may belong to the caller until then: a first occurrence is
// copied, never kept as it is.
func (in *interner) record(c *Container) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.strs == nil {
		in.strs = map[string]string{}
		in.cmds = map[string][]string{}
		in.maps = map[string]map[string]string{}
	}
	c.Name = in.str(c.Name)
	c.Image = in.str(c.Image)
	c.InstanceType = in.str(c.InstanceType)
	c.Command = in.command(c.Command)
	c.Env = in.strMap(c.Env)
	c.Labels = in.strMap(c.Labels)
	c.Scheduling.Constraints = in.strMap(c.Scheduling.Constraints)
	if p := c.Scheduling.Preemptible; p != nil {
		c.Scheduling.Preemptible = &preemptibleNo
		if *p {
			c.Scheduling.Preemptible = &preemptibleYes
		}
	}
}

// str is the shared copy of s.
func (in *interner) str(s string) string {
	if s == "" {
		return ""
	}
	if t, ok := in.strs[s]; ok {
		return t
	}
	if len(in.strs) >= internMax {
		clear(in.strs)
	}
	in.strs[s] = s
	return s
}

// command is the shared copy of cmd, whose strings are shared too; an
// empty one stays nil or empty as it was (the store tells them apart).
func (in *interner) command(cmd []string) []string {
	if len(cmd) == 0 {
		return cmd[:0:0]
	}
	k := in.key[:0]
	for _, s := range cmd {
		k = appendKeyPart(k, s)
	}
	in.key = k
	if c, ok := in.cmds[string(k)]; ok {
		return c
	}
	if len(in.cmds) >= internMax {
		clear(in.cmds)
	}
	c := make([]string, len(cmd))
	for i, s := range cmd {
		c[i] = in.str(s)
	}
	in.cmds[string(k)] = c
	return c
}

// strMap is the shared copy of m (nil for an empty one, as copyMap).
func (in *interner) strMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	ks := in.keys[:0]
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	k := in.key[:0]
	for _, s := range ks {
		k = appendKeyPart(appendKeyPart(k, s), m[s])
	}
	clear(ks) // the scratch keeps no caller's strings
	in.key, in.keys = k, ks[:0]
	if s, ok := in.maps[string(k)]; ok {
		return s
	}
	if len(in.maps) >= internMax {
		clear(in.maps)
	}
	s := make(map[string]string, len(m))
	for k, v := range m {
		s[in.str(k)] = in.str(v)
	}
	in.maps[string(k)] = s
	return s
}

// appendKeyPart appends s to a table's key, its length first: no two
// lists of strings make the same key, whatever bytes they hold.
func appendKeyPart(k []byte, s string) []byte {
	return append(binary.AppendUvarint(k, uint64(len(s))), s...)
}
