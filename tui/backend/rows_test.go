package backend

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"unsafe"

	"dispatch-tui/engine/api"
	"dispatch-tui/engine/view"
)

// rowsList is a snapshot's containers as rows, in order.
func rowsList(s *Snapshot) []Row {
	var out []Row
	s.Rows.Each(func(r *Row, _ int32) { out = append(out, *r) })
	return out
}

// placeOfID is the place of id's row (Slots.Place), 0 for none.
func placeOfID(s *Rows, id string) (p int32) {
	s.Read(func(v Slots) {
		if i, ok := v.Index(id); ok {
			p = v.Place(i)
		}
	})
	return p
}

// checkIndex fails when s's index by id does not match its rows.
func checkIndex(t *testing.T, what string, s *Rows) {
	t.Helper()
	s.mu.RLock()
	defer s.mu.RUnlock()
	for i := range s.rows.len() {
		c := s.rows.at(i)
		if c.gone {
			if got, ok := s.at.get(&s.rows, c.ID); ok && got == int32(i) {
				t.Errorf("%s: the index says gone %s is row %d", what, c.ID, i)
			}
			continue
		}
		if got, _ := s.at.get(&s.rows, c.ID); got != int32(i) {
			t.Errorf("%s: the index says %s is row %d, it is row %d", what, c.ID, got, i)
		}
	}
	if s.at.len() != s.rows.len()-s.dead {
		t.Errorf("%s: %d ids indexed for %d rows (%d gone)", what, s.at.len(), s.rows.len(), s.dead)
	}
	checkCounts(t, what, s)
}

// checkCounts fails when s's counts (Counts) are not what counting its
// live rows gives.
func checkCounts(t *testing.T, what string, s *Rows) {
	t.Helper()
	want, total, failed := map[view.State]int{}, 0, 0
	s.Each(func(r *Row, _ int32) {
		want[r.State]++
		total++
		if r.Failed() {
			failed++
		}
	})
	got, gotTotal, gotFailed := s.Counts()
	if !maps.Equal(got, want) || gotTotal != total || gotFailed != failed {
		t.Errorf("%s: counts %v, %d in all, %d failed; the rows have %v, %d, %d", what, got, gotTotal, gotFailed, want, total, failed)
	}
}

// The counts the header shows follow the rows through every way a row
// comes, changes and goes: a first read (upsert, removeAll), a refresh
// (apply: changed, added, dropped), a compaction, and rows made whole
// (NewRows); a container that failed is counted as long as its row is.
func TestRowsCountsFollowTheRows(t *testing.T) {
	exit := func(st view.State, code int32) Row { return Row{State: st, HasExit: true, Exit: code} }
	rng := rand.New(rand.NewPCG(3, 4))
	kinds := []Row{{State: view.Queued}, {State: view.Locked}, {State: view.Running},
		exit(view.Complete, 0), exit(view.Complete, 2), exit(view.Cancelled, 1)}
	row := func(i int) Row {
		r := kinds[rng.IntN(len(kinds))]
		r.ID, r.Seq, r.Priority = "c"+strconv.Itoa(i), uint64(i), 1
		return r
	}
	s := &Rows{}
	for i := range 3000 {
		s.upsert(row(i))
	}
	for i := range 500 {
		s.upsert(row(i)) // read again on a later page
	}
	gone := map[string]bool{}
	for i := 0; i < 3000; i += 7 {
		gone["c"+strconv.Itoa(i)] = true
	}
	s.removeAll(gone)
	checkIndex(t, "first read", s)
	s.numberLine()
	next := 3000
	for round := range 40 {
		var changed []Row
		dropped := map[string]bool{}
		for range 60 {
			switch k := rng.IntN(10); {
			case k < 6:
				changed = append(changed, row(rng.IntN(next)))
			case k < 8:
				changed = append(changed, row(next))
				next++
			default:
				dropped["c"+strconv.Itoa(rng.IntN(next))] = true
			}
		}
		for _, c := range changed {
			delete(dropped, c.ID)
		}
		s.apply(changed, dropped)
		checkIndex(t, fmt.Sprint("round ", round), s)
		if s.dead > s.rows.len()/8 {
			s = s.compacted()
			checkIndex(t, fmt.Sprint("compacted after round ", round), s)
		}
	}
	var all []view.Container
	s.Each(func(r *Row, _ int32) {
		c := view.Container{State: r.State}
		c.ID, c.Seq = r.ID, r.Seq
		if r.HasExit {
			c.ExitCode = new(int)
			*c.ExitCode = int(r.Exit)
		}
		all = append(all, c)
	})
	checkCounts(t, "made whole", NewRows(all, s))
}

// newRowsEnv is a daemon's API over an engine holding n waiting
// containers with labels, and a Remote that has read them all.
func newRowsEnv(t *testing.T, n int) (*testEnv, *Remote, *Snapshot) {
	t.Helper()
	e, r, _ := newRemoteEnv(t)
	if err := e.eng.Pause("test", ""); err != nil {
		t.Fatal(err)
	}
	specs := make([]view.Spec, n)
	for i := range specs {
		p := 1 + i%3
		specs[i] = view.Spec{Command: []string{"true", "--a-long-argument", strconv.Itoa(i)}, Priority: &p,
			Env:    map[string]string{"SOME": "value", "OTHER": strconv.Itoa(i)},
			Labels: map[string]string{"team": "t" + strconv.Itoa(i%7), "batch": "b1"}}
	}
	if _, err := e.eng.SubmitBatch(specs, "test"); err != nil {
		t.Fatal(err)
	}
	e.step(1) // a pass: every one gets its pending reason
	s, err := r.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Rows.Len(); got != n {
		t.Fatalf("first read: %d containers, want %d", got, n)
	}
	return e, r, s
}

// The rows of an attached console are compact: far less heap per
// container than the full record it was read as, equal strings (state,
// labels, reasons) shared between rows.
func TestRemoteRowsAreCompact(t *testing.T) {
	const n = 2000
	_, r, s := newRowsEnv(t, n)
	rows := rowsList(s)
	a, b := rows[0], rows[7] // the same labels (i%7), state and reason
	if a.Tags != "batch=b1 team=t0" || a.Tags != b.Tags {
		t.Fatalf("tags %q and %q, want both %q", a.Tags, b.Tags, "batch=b1 team=t0")
	}
	if unsafe.StringData(a.Tags) != unsafe.StringData(b.Tags) || unsafe.StringData(string(a.State)) != unsafe.StringData(string(b.State)) {
		t.Error("equal tags or states are separate copies in the rows, not one shared string")
	}
	forgetAll(r)
	var m0, m1 runtime.MemStats
	// Two collections before each reading: the first only moves sync.Pool
	// contents (the API's JSON encoder keeps a buffer the size of its last
	// answer) to the pools' victim caches, the second frees them.
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m0)
	s, err := r.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	forgetAll(r) // only s holds its rows
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m1)
	per := (int64(m1.HeapAlloc) - int64(m0.HeapAlloc)) / n
	runtime.KeepAlive(s)
	// A full view.Container with these maps and its command is over 1 kB;
	// the row about 200 bytes, its id and the index by id.
	if per > 400 {
		t.Errorf("a snapshot holds %d bytes of heap per container, want at most 400", per)
	}
	t.Logf("%d bytes of heap per container", per)
}

// A refresh after a few changes applies them to the same rows: it
// allocates nothing like a copy of them, and what it shows is right.
func TestRemoteAppliesChangesInPlace(t *testing.T) {
	const n = 2000
	e, r, s := newRowsEnv(t, n)
	rows := rowsList(s)
	held, gone := rows[10].ID, rows[20].ID
	if _, err := e.eng.HoldContainer(held, "test", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := e.eng.KillContainer(gone, "test", ""); err != nil {
		t.Fatal(err)
	}
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	s2, err := r.Snapshot(context.Background())
	runtime.ReadMemStats(&m1)
	if err != nil {
		t.Fatal(err)
	}
	// The old way copied every row: n full records, over 2 MB here.
	if alloc := m1.TotalAlloc - m0.TotalAlloc; alloc > 600<<10 {
		t.Errorf("a refresh after 2 changes allocated %d kB (client and server), want under 600 kB: a copy of the rows?", alloc>>10)
	}
	if s2.Rows != s.Rows {
		t.Error("the refresh made new rows instead of applying the changes in place")
	}
	h, _ := s2.Rows.Get(held)
	k, _ := s2.Rows.Get(gone)
	if !h.Held || h.ReasonText(placeOfID(s2.Rows, held)) == "" || k.State != view.Cancelled || s2.Rows.Len() != n {
		t.Errorf("after a hold and a kill: %s held=%v (%q), %s %s, %d rows", held, h.Held, h.Reason, gone, k.State, s2.Rows.Len())
	}
	checkIndex(t, "after the changes", s2.Rows)
}

// Rows removed keep the others in order, and the index right.
func TestRowsRemoveKeepsOrder(t *testing.T) {
	s := &Rows{}
	for i := range 10 {
		s.upsert(Row{ID: strconv.Itoa(i), Seq: uint64(i)})
	}
	s.removeAll(map[string]bool{"0": true, "4": true, "9": true})
	var got []string
	s.Each(func(r *Row, _ int32) { got = append(got, r.ID) })
	if want := []string{"1", "2", "3", "5", "6", "7", "8"}; !slices.Equal(got, want) {
		t.Fatalf("after removing 0, 4 and 9: %v, want %v", got, want)
	}
	checkIndex(t, "after removing", s)
}

// Changes applied in place: a changed row replaced where it is, a new one
// after the others in submission order, a gone one out; the line
// numbered again when one in it changed.
func TestRowsApply(t *testing.T) {
	pos := view.ReasonPosition
	s := &Rows{}
	for i := range 5 {
		s.upsert(Row{ID: "c" + strconv.Itoa(i), Seq: uint64(i), State: view.Queued, Priority: 1, ReasonCode: pos})
	}
	s.numberLine()
	before := s.ver
	held := Row{ID: "c1", Seq: 1, State: view.Queued, Priority: 1, Held: true, ReasonCode: view.ReasonHeld, Reason: "held"}
	added := Row{ID: "c9", Seq: 9, State: view.Queued, Priority: 1, ReasonCode: pos, Reason: "position 77 in queue"} // the daemon's number is not kept
	s.apply([]Row{added, held, {ID: ""}}, map[string]bool{"c3": true})
	var got []string
	s.Each(func(r *Row, p int32) { got = append(got, r.ID+":"+r.ReasonText(p)) })
	want := []string{"c0:position 1 in queue", "c1:held", "c2:position 2 in queue", "c4:position 3 in queue", "c9:position 4 in queue"}
	if !slices.Equal(got, want) {
		t.Fatalf("after holding c1, dropping c3 and adding c9:\n got %q\nwant %q", got, want)
	}
	// A row whose place alone changed is flagged changed (Slots.Ver), one
	// whose place stayed is not.
	s.Read(func(v Slots) {
		for id, changed := range map[string]bool{"c0": false, "c2": true, "c4": true} {
			i, _ := v.Index(id)
			if got := v.Ver(i) > before; got != changed || v.At(i).Ver > before {
				t.Errorf("%s: changed %v (row at version %d, its place at %d, before %d), want %v", id, got, v.At(i).Ver, v.Ver(i), before, changed)
			}
		}
	})
	checkIndex(t, "after applying", s)
}

// Only a row in the line shows a place (Slots.Place), even where a
// whole list's container says otherwise: the console's REASON does not
// read a row with a place, so a finished one must show none.
func TestNewRowsPlacesOnlyTheLine(t *testing.T) {
	pos := view.Pending{Code: view.ReasonPosition, N: 3}
	code := 2
	cs := []view.Container{
		{ContainerBody: view.ContainerBody{ID: "waits", ReasonCode: view.ReasonPosition}, State: view.Queued, Priority: 1, Pending: pos},
		{ContainerBody: view.ContainerBody{ID: "ended", ReasonCode: view.ReasonPosition, ExitCode: &code}, State: view.Complete, Priority: 1, Pending: pos},
		{ContainerBody: view.ContainerBody{ID: "held", ReasonCode: view.ReasonPosition}, State: view.Queued, Priority: 1, Held: true, Pending: pos},
	}
	s := NewRows(cs, nil)
	for id, want := range map[string]int32{"waits": 3, "ended": 0, "held": 0} {
		if got := placeOfID(s, id); got != want {
			t.Errorf("%s shows place %d, want %d", id, got, want)
		}
	}
}

// A refresh keeps every row in its slot: one taken out stays there,
// gone, so that an order of slots made before still names the same rows;
// once a quarter of the slots are gone, the copy is compacted into new
// rows.
func TestRowsKeepSlots(t *testing.T) {
	s := &Rows{}
	for i := range 8 {
		s.upsert(Row{ID: "c" + strconv.Itoa(i), Seq: uint64(i), State: view.Running})
	}
	s.apply([]Row{{ID: "c8", Seq: 8, State: view.Running}}, map[string]bool{"c2": true, "c5": true})
	var ids []string
	s.Read(func(v Slots) {
		if v.Len() != 9 || v.Live() != 7 {
			t.Errorf("%d slots, %d live; want 9 and 7", v.Len(), v.Live())
		}
		for i := range v.Len() {
			r := v.At(i)
			if v.Gone(i) != r.Gone() {
				t.Errorf("slot %d: Slots.Gone says %v, its row %v", i, v.Gone(i), r.Gone())
			}
			if r.Gone() {
				ids = append(ids, "-"+r.ID)
			} else {
				ids = append(ids, r.ID)
			}
		}
		if _, ok := v.Index("c2"); ok {
			t.Error("gone c2 still has a slot by its id")
		}
	})
	if want := []string{"c0", "c1", "-c2", "c3", "c4", "-c5", "c6", "c7", "c8"}; !slices.Equal(ids, want) {
		t.Errorf("slots %v, want %v", ids, want)
	}
	if s.Len() != 7 {
		t.Errorf("Len %d, want 7", s.Len())
	}
	checkIndex(t, "with gone slots", s)
	c := s.compacted()
	if c.Len() != 7 || c.rows.len() != 7 || c.ver != s.ver {
		t.Errorf("compacted: %d rows in %d slots at version %d, want 7 in 7 at %d", c.Len(), c.rows.len(), c.ver, s.ver)
	}
	checkIndex(t, "compacted", c)
}

// A refresh renumbers the line from the rows it touched: after rounds of
// changes, drops, additions and a compaction, every row's number is what
// ordering the whole line from nothing gives — also through rounds where
// every row waits at quota, showing no place, and back.
func TestRenumberMatchesNumberLine(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 32))
	states := []view.State{view.Queued, view.Queued, view.Queued, view.Locked, view.Running, view.Complete}
	atQuota := true // every row made shows the quota
	row := func(id int) Row {
		r := Row{ID: "c" + strconv.Itoa(id), Seq: uint64(id), State: states[rng.IntN(len(states))],
			Priority: int32(rng.IntN(4)), FirstSeenAt: int64(rng.IntN(3)), ReasonCode: view.ReasonPosition}
		if rng.IntN(8) == 0 {
			r.Held = true
		}
		if atQuota || rng.IntN(8) == 0 {
			r.ReasonCode = view.ReasonQuota
		}
		return r
	}
	s := &Rows{}
	next := 0
	for range 500 {
		s.upsert(row(next))
		next++
	}
	s.numberLine()
	for round := range 60 {
		atQuota = round < 10 || round >= 20 && round < 25
		var changed []Row
		gone := map[string]bool{}
		for range rng.IntN(40) {
			changed = append(changed, row(rng.IntN(next)))
		}
		for range rng.IntN(10) {
			changed = append(changed, row(next))
			next++
		}
		for range rng.IntN(20) {
			id := "c" + strconv.Itoa(rng.IntN(next))
			if !slices.ContainsFunc(changed, func(r Row) bool { return r.ID == id }) {
				gone[id] = true
			}
		}
		s.apply(changed, gone)
		if round == 30 {
			s = s.compacted()
		}
		want := &Rows{}
		s.Each(func(r *Row, _ int32) { want.upsert(*r) })
		want.numberLine()
		var got, exp []string
		s.Each(func(r *Row, p int32) { got = append(got, r.ID+":"+r.ReasonText(p)) })
		want.Each(func(r *Row, p int32) { exp = append(exp, r.ID+":"+r.ReasonText(p)) })
		if !slices.Equal(got, exp) {
			for i := range got {
				if got[i] != exp[i] {
					t.Fatalf("round %d: row %d is %q, numbered from nothing %q", round, i, got[i], exp[i])
				}
			}
		}
	}
}

// A refresh that changes a few rows of a long line renumbers it without
// ordering it all again: what it allocates does not grow with the line
// (it made a sort key of 32 bytes for each row in the line, 3.2 MB here,
// grown by appending: about five times that).
func TestRenumberAllocatesLittle(t *testing.T) {
	const n = 100000
	s := &Rows{}
	for i := range n {
		s.upsert(Row{ID: "c" + strconv.Itoa(i), Seq: uint64(i), State: view.Queued, Priority: 1, ReasonCode: view.ReasonPosition})
	}
	s.numberLine()
	var before, after runtime.MemStats
	var allocated uint64
	for round := range 5 {
		changed := make([]Row, 10)
		for k := range changed {
			i := 1 + (round*10+k)*997%(n-1)
			changed[k] = Row{ID: "c" + strconv.Itoa(i), Seq: uint64(i), State: view.Queued, Priority: int32(2 + round), ReasonCode: view.ReasonPosition}
		}
		runtime.ReadMemStats(&before)
		s.apply(changed, nil)
		runtime.ReadMemStats(&after)
		allocated = max(allocated, after.TotalAlloc-before.TotalAlloc)
	}
	if p := placeOfID(s, "c0"); p != 51 {
		t.Errorf("c0 at position %d after 50 rows were put before it, want 51", p)
	}
	if allocated > n/2 {
		t.Errorf("a refresh changing 10 rows of a line of %d allocated %d bytes, want under %d (half a byte a row)", n, allocated, n/2)
	}
	t.Logf("%d bytes allocated by a refresh of 10 changes", allocated)
}

// A row read with its labels and constraints as pairs (rowOfPairs, what
// an attached console reads) is the row RowOf makes of the whole view.
func TestRowOfPairsAsRowOf(t *testing.T) {
	var in Interner
	var buf []byte
	var p api.Pairs
	type spec struct {
		labels, constraints map[string]string
		supervisor          bool
		tags                string // Row.Tags: "k=v" sorted as strings, "supervisor" last
	}
	for i, sp := range []spec{
		{},
		{labels: map[string]string{"team": "t1", "a-b": "1", "a": "2"}, tags: "a-b=1 a=2 team=t1"},
		{labels: map[string]string{"k": "v"}, constraints: map[string]string{"k": "v", "zone": "z"}, supervisor: true, tags: "k=v k=v zone=z supervisor"},
		{supervisor: true, tags: "supervisor"},
		{labels: map[string]string{}},
	} {
		c := view.Container{State: view.Queued}
		c.Labels, c.Scheduling.Constraints, c.Scheduling.Supervisor = sp.labels, sp.constraints, sp.supervisor
		c.ID, c.Name = fmt.Sprint("c-", i), "n"
		want := RowOf(&c, &in)
		if want.Tags != sp.tags {
			t.Errorf("view %d: tags %q, want %q", i, want.Tags, sp.tags)
		}
		bare := c
		p.TakeMaps(&bare)
		if got := rowOfPairs(&bare, &p, &in, &buf); got != want {
			t.Errorf("view %d: row with pairs %+v, want %+v", i, got, want)
		}
	}
}
