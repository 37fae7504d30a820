// The crash behaviour of the conformance suite: a child process flushes
// batch after batch and is killed with SIGKILL; the store then loads one
// whole flush, never part of one, and at least every flush the child saw
// return.

package store_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"dispatch-tui/engine/store"
)

// childEnv names the backend a crash child opens ("kind at").
const (
	childEnv   = "STORETEST_CRASH_CHILD"
	childAtEnv = "STORETEST_CRASH_AT"
)

// crashRecords is how many records each of the child's flushes rewrites.
const crashRecords = 200

// crashRecord is a record of the crash test: its version is the flush
// that wrote it.
type crashRecord struct {
	ID      string `json:"id"`
	Seq     uint64 `json:"seq"`
	Version int    `json:"version"`
	Pad     string `json:"pad"`
}

// crashChild is the child's body: flush version after version of every
// record, with one event each (the event's Seq is the version), printing
// each version once its flush has returned, until killed.
func crashChild() {
	st, err := openBackend(os.Getenv(childEnv), os.Getenv(childAtEnv), storeOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	// A later round goes on from the version the last one left.
	last := 0
	_, err = st.Load(1, store.RecordFunc(func(body []byte) (uint64, string, error) {
		var r crashRecord
		err := json.Unmarshal(body, &r)
		last = r.Version
		return r.Seq, r.ID, err
	}), func(uint64, []byte) error { return nil })
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var b store.Batch
	for v := last + 1; ; v++ {
		b.Reset()
		b.Records = crashRecords
		for seq := range uint64(crashRecords) {
			j, _ := json.Marshal(crashRecord{ID: fmt.Sprint("c-", seq), Seq: seq, Version: v, Pad: "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"})
			b.EndRecord(append(b.BeginRecord(seq), j...))
		}
		b.EndEvent(uint64(v), append(b.BeginEvent(), fmt.Sprintf(`{"seq":%d}`, v)...))
		write := st.Flush
		if v == 1 {
			write = st.Submit
		}
		if err := write(&b); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Println(v)
	}
}

func testCrashMidFlush(t *testing.T, b backend) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	start := 0 // the version the store holds
	for round := range 3 {
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"="+b.kind, childAtEnv+"="+b.at)
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Kill it at a different point each round, while it writes.
		lines := bufio.NewScanner(out)
		seen := 0
		deadline := time.Now().Add(time.Minute)
		for seen < start+5+7*round && lines.Scan() {
			if time.Now().After(deadline) {
				break
			}
			seen, _ = strconv.Atoi(lines.Text())
		}
		cmd.Process.Kill()
		cmd.Wait()
		if seen <= start {
			t.Fatalf("round %d: the child flushed nothing before its deadline", round)
		}
		st := b.open(t, storeOptions{})
		versions := map[int]int{}
		var events []uint64
		loaded, err := st.Load(1<<20, store.RecordFunc(func(body []byte) (uint64, string, error) {
			var r crashRecord
			err := json.Unmarshal(body, &r)
			versions[r.Version]++
			return r.Seq, r.ID, err
		}), func(seq uint64, _ []byte) error {
			events = append(events, seq)
			return nil
		})
		if err != nil {
			t.Fatalf("round %d: load after the kill: %v", round, err)
		}
		st.Close()
		if len(versions) != 1 {
			t.Fatalf("round %d: the records come from several flushes %v: a flush was not written whole", round, versions)
		}
		for v, n := range versions {
			if n != crashRecords || v < seen {
				t.Fatalf("round %d: %d records of version %d; want %d of at least %d (the last flush the child saw return)", round, n, v, crashRecords, seen)
			}
			if len(events) != v || loaded.NextEvent != uint64(v)+1 {
				t.Fatalf("round %d: %d events, next %d; want %d, next %d (with its flush's records)", round, len(events), loaded.NextEvent, v, v+1)
			}
			start = v
		}
	}
}
