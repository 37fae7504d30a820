package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

// benchStatuses is n statuses as one runner lists them: a third running,
// the rest exited, a few of those by a signal.
func benchStatuses(n int) []Status {
	t0 := time.Date(2026, 11, 25, 18, 0, 0, 123456789, time.UTC)
	sts := make([]Status, n)
	for i := range sts {
		st := Status{ID: fmt.Sprintf("w1-ctr-%06d", i), PID: 100000 + i, State: StateRunning, StartedAt: t0.Add(time.Duration(i) * time.Millisecond)}
		if i%3 != 0 {
			st.State, st.FinishedAt = StateExited, st.StartedAt.Add(1234567*time.Nanosecond)
			if i%7 == 0 {
				st.ExitCode, st.Signal = 143, SignalTerm
			}
		}
		sts[i] = st
	}
	return sts
}

// BenchmarkFormatList: what a runner spends writing a list of 256.
//
//	go test -run='^$' -bench='FormatList|ParseList' ./engine/runner
func BenchmarkFormatList(b *testing.B) {
	sts := benchStatuses(256)
	var buf bytes.Buffer
	b.ReportAllocs()
	defer cpuMeter(b)()
	for b.Loop() {
		buf.Reset()
		if err := FormatList(&buf, sts); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(buf.Len()))
}

// BenchmarkParseList: what the dispatcher spends reading that list.
func BenchmarkParseList(b *testing.B) {
	var buf bytes.Buffer
	if err := FormatList(&buf, benchStatuses(256)); err != nil {
		b.Fatal(err)
	}
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	defer cpuMeter(b)()
	for b.Loop() {
		sts, err := ParseList(data)
		if err != nil || len(sts) != 256 {
			b.Fatal(len(sts), err)
		}
	}
}

// BenchmarkListReply: what the dispatcher spends on a list of 256 that a
// batch or serve call returns: decoding the reply, then ParseList.
func BenchmarkListReply(b *testing.B) {
	var list bytes.Buffer
	if err := FormatList(&list, benchStatuses(256)); err != nil {
		b.Fatal(err)
	}
	var out bytes.Buffer
	if err := json.NewEncoder(&out).Encode(&Reply{Stdout: list.Bytes()}); err != nil {
		b.Fatal(err)
	}
	c := &Client{Exec: listReplyExec{out.Bytes()}, Path: "/r"}
	reqs := []Request{{Verb: "list"}}
	b.SetBytes(int64(out.Len()))
	b.ReportAllocs()
	defer cpuMeter(b)()
	for b.Loop() {
		replies, err := c.Batch(context.Background(), reqs)
		if err != nil {
			b.Fatal(err)
		}
		sts, err := ParseList(replies[0].Stdout)
		if err != nil || len(sts) != 256 {
			b.Fatal(len(sts), err)
		}
	}
}

// listReplyExec answers every command with out.
type listReplyExec struct{ out []byte }

func (e listReplyExec) Execute(context.Context, string, []byte) ([]byte, []byte, error) {
	return e.out, nil, nil
}
func (listReplyExec) Close() error { return nil }
