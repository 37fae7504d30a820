package queue

import (
	"cmp"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"dispatch-tui/engine/store"
)

// listStore is a Store whose Load reads a list of records, in the list's
// order, through the pipeline as the stores do (PostgreSQL sends its rows
// in no order the queue chooses). Only Load is called on it.
type listStore struct {
	store.Store
	records [][]byte
}

func (s listStore) Load(_ int, recs store.Records, _ func(uint64, []byte) error) (store.Loaded, error) {
	p := store.NewPipeline(recs, func(key []byte, _ uint64, _ string, err error) error {
		if err != nil {
			return fmt.Errorf("load container %d: %w", binary.BigEndian.Uint64(key), err)
		}
		return nil
	})
	defer p.Close()
	var key [8]byte
	for i, body := range s.records {
		binary.BigEndian.PutUint64(key[:], uint64(i))
		if err := p.Put(key[:], body); err != nil {
			return store.Loaded{}, err
		}
	}
	return store.Loaded{NextEvent: 1}, p.Close()
}

func (listStore) Close() error { return nil }

// loadRecords is n stored records in no order of theirs: random ones of
// four shapes (and a few of their own) as appendContainer writes them,
// every tenth indented and every tenth in the older layout (both left to
// encoding/json).
func loadRecords(t *testing.T, n int) [][]byte {
	rng := rand.New(rand.NewPCG(29, 7))
	r := randomRecords{rng}
	shapes := []Constraints{{VCPUs: 1, RAM: 1 << 30}, {VCPUs: 4, RAM: 16 << 30}, {VCPUs: 8, RAM: 64 << 30, GPUs: 1}, {}}
	var out [][]byte
	for i := range n {
		c := r.container()
		c.ID, c.Seq = fmt.Sprintf("c-%016x", i), uint64(3*i+1)
		if rng.IntN(50) > 0 {
			c.RuntimeConstraints = shapes[rng.IntN(len(shapes))]
		}
		j, err := appendContainer(nil, &c)
		if err != nil {
			continue // a time MarshalJSON refuses: never stored
		}
		switch i % 10 {
		case 3:
			if j, err = json.MarshalIndent(&c, "", " "); err != nil {
				t.Fatal(err)
			}
		case 7:
			if c.Scheduling.Constraints == nil {
				j = []byte(strings.Replace(string(j), `"scheduling":{`, `"scheduling":{"labels":{"zone":"b"},`, 1))
			}
		}
		out = append(out, j)
	}
	rng.Shuffle(len(out), func(a, b int) { out[a], out[b] = out[b], out[a] })
	return out
}

// ids are the ids of cs, in order.
func ids(cs []*Container) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.ID
	}
	return out
}

// A load decodes records on several goroutines: the index it builds is
// the one a load of one record at a time by encoding/json builds from the
// same records in the same order — every record, the order of the active
// and the final ones, the Seq index, the shape ids, the counts.
func TestLoadBuildsTheIndexOfOneRecordAtATime(t *testing.T) {
	if prev := runtime.GOMAXPROCS(4); prev != 4 { // more decoders than cores: more out of order
		t.Cleanup(func() { runtime.GOMAXPROCS(prev) })
	}
	records := loadRecords(t, 2500)
	q, err := Open(Options{Store: listStore{records: records}})
	if err != nil {
		t.Fatal(err)
	}

	// One record at a time, by encoding/json, as the index was built
	// before the pipeline.
	want := map[string]*Container{}
	var active, all []*Container
	shapes := []Constraints{{}}
	counts := map[State]int{}
	var next uint64
	for _, j := range records {
		c, err := unmarshalRecord(j)
		if err != nil {
			t.Fatalf("the record does not decode (%v): %s", err, j)
		}
		c.setHints()
		i := slices.Index(shapes[1:], c.RuntimeConstraints)
		if i < 0 {
			shapes = append(shapes, c.RuntimeConstraints)
			i = len(shapes) - 2
		}
		c.shape = uint16(i + 1)
		want[c.ID] = &c
		if !c.State.Final() {
			active = append(active, &c)
		}
		all = append(all, &c)
		counts[c.State]++
		next = max(next, c.Seq+1)
	}
	bySeq := slices.SortedFunc(slices.Values(all), func(a, b *Container) int { return cmp.Compare(a.Seq, b.Seq) })
	finished := slices.DeleteFunc(slices.Clone(bySeq), func(c *Container) bool { return !c.State.Final() })

	if q.byID.len() != len(want) {
		t.Fatalf("%d records loaded, want %d", q.byID.len(), len(want))
	}
	for id, w := range want {
		if got := q.byID.get(id); got == nil || !reflect.DeepEqual(*got, *w) {
			t.Fatalf("record %s loaded as\n%#v\nwant\n%#v", id, got, w)
		}
	}
	for _, l := range []struct {
		name      string
		got, want []*Container
	}{{"active (in the order read)", q.active, active}, {"finished (by Seq)", q.finished, finished}, {"by Seq", q.bySeq, bySeq}} {
		if got, want := ids(l.got), ids(l.want); !slices.Equal(got, want) {
			t.Fatalf("%s: %d records, want %d; first difference at %d", l.name, len(got), len(want), firstDiff(got, want))
		}
	}
	if !slices.Equal(q.shapes, shapes) {
		t.Fatalf("shapes %v, want %v (ids in the order first read)", q.shapes, shapes)
	}
	if !reflect.DeepEqual(q.counts, counts) || q.nextSeq != next || !q.unsorted {
		t.Fatalf("counts %v, next Seq %d, unsorted %v; want %v, %d, true", q.counts, q.nextSeq, q.unsorted, counts, next)
	}
}

// firstDiff is the first index where a and b differ.
func firstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// Of two records that do not decode, the load names the first read,
// whichever decoder met its record first.
func TestLoadFailsAtTheFirstBadRecord(t *testing.T) {
	records := loadRecords(t, 2500)
	first, second := len(records)/3, 2*len(records)/3
	records[first] = []byte(`{"state":`)
	records[second] = []byte(`not a record`)
	q, err := Open(Options{Store: listStore{records: records}})
	if want := fmt.Sprintf("load container %d: ", first); err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("Open: %v, %v; want the error of record %d", q, err, first)
	}
}
