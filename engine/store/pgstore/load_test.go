package pgstore

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"dispatch-tui/engine/clock"
	"dispatch-tui/engine/enginetest/pgtest"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/store"
	"dispatch-tui/engine/store/boltstore"
	"dispatch-tui/engine/view"
)

// loadBatch is n records of every state, several shapes and priorities,
// some with an environment, labels, constraints or text to escape, every
// ninth indented (read by encoding/json), one of them over the load's
// batch size.
func loadBatch(t *testing.T, n int) *store.Batch {
	var b store.Batch
	for seq := range uint64(n) {
		c := queue.Container{
			ContainerBody: view.ContainerBody{
				ID:            fmt.Sprintf("c-%016x", seq),
				Name:          fmt.Sprint("job-", seq, []string{"", " \"quoted\"", " é", "\t"}[seq%4]),
				Command:       []string{"run", fmt.Sprint(seq % 7)},
				MaxAttempts:   3,
				RestartPolicy: queue.RestartNever,
				CreatedAt:     time.Unix(int64(seq/3), 0).UTC(),
			},
			RuntimeConstraints: queue.Constraints{VCPUs: 1 + int(seq%4), RAM: int64(1+seq%3) << 30},
			Priority:           int(seq % 5),
			State:              queue.States[seq%uint64(len(queue.States))],
			FirstSeenAt:        time.Unix(int64(seq/3), 0).UTC(),
			ContainerTail:      view.ContainerTail{Seq: seq},
		}
		if seq%5 == 0 {
			c.Env = map[string]string{"SEQ": fmt.Sprint(seq), "EMPTY": ""}
			c.Labels = map[string]string{"team": fmt.Sprint("t", seq%3)}
		}
		if seq%11 == 0 {
			c.Scheduling.Constraints = map[string]string{"zone": "b"}
		}
		if seq == 17 {
			c.Env = map[string]string{"BIG": strings.Repeat("x", 300<<10)}
		}
		j, err := json.Marshal(&c)
		if seq%9 == 4 {
			j, err = json.MarshalIndent(&c, "", "  ")
		}
		if err != nil {
			t.Fatal(err)
		}
		b.EndRecord(append(b.BeginRecord(seq), j...))
	}
	return &b
}

// openQueue opens a queue on s and returns its containers as a reader
// sees them: in the order of Each, with the counts by state.
func openQueue(t *testing.T, s store.Store) ([]view.Container, map[queue.State]int) {
	t.Helper()
	q, err := queue.Open(queue.Options{Store: s, Clock: clock.NewFake(time.Unix(0, 0))})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	var cs []*queue.Container
	q.Each(func(c *queue.Container) bool { cs = append(cs, c); return true })
	return q.Views(cs), q.Counts()
}

// The same records loaded from PostgreSQL (rows in the server's order,
// read raw) and from the embedded store (in Seq order) make the same
// queue.
func TestLoadMatchesTheEmbeddedStore(t *testing.T) {
	const n = 3000
	pg := open(t, pgtest.NewDatabase(t))
	if err := pg.Submit(loadBatch(t, n)); err != nil {
		t.Fatal(err)
	}
	bolt, err := boltstore.Open(boltstore.Options{Path: filepath.Join(t.TempDir(), "queue.db")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bolt.Load(1, store.RecordFunc(func([]byte) (uint64, string, error) { return 0, "", nil }), func(uint64, []byte) error { return nil }); err != nil {
		t.Fatal(err) // a new file's buckets
	}
	if err := bolt.Submit(loadBatch(t, n)); err != nil {
		t.Fatal(err)
	}
	got, gotCounts := openQueue(t, pg)
	want, wantCounts := openQueue(t, bolt)
	if len(got) != n || !reflect.DeepEqual(gotCounts, wantCounts) {
		t.Fatalf("PostgreSQL: %d containers, counts %v; the embedded store: %d, %v", len(got), gotCounts, len(want), wantCounts)
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Fatalf("container %d in order: PostgreSQL's\n%+v\nthe embedded store's\n%+v", i, got[i], want[i])
		}
	}
}

// A row whose record names another Seq is refused, saying which.
func TestLoadRefusesARecordOfAnotherSeq(t *testing.T) {
	url := pgtest.NewDatabase(t)
	s := open(t, url)
	b := loadBatch(t, 8)
	var wrong store.Batch
	j, err := json.Marshal(queue.Container{State: queue.Queued, ContainerBody: view.ContainerBody{ID: "c-x"}, ContainerTail: view.ContainerTail{Seq: 6}})
	if err != nil {
		t.Fatal(err)
	}
	wrong.EndRecord(append(wrong.BeginRecord(5), j...))
	if err := s.Submit(b); err != nil {
		t.Fatal(err)
	}
	if err := s.Submit(&wrong); err != nil {
		t.Fatal(err)
	}
	_, err = queue.Open(queue.Options{Store: s})
	if err == nil || !strings.Contains(err.Error(), "load container 5: the record says seq 6") {
		t.Fatalf("Open: %v; want the record of row 5 refused", err)
	}
}
