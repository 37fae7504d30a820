// The table of protocol behaviours every runner must pass.

package runnertest

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	"dispatch-tui/engine/runner"
)

// cases is the table of protocol behaviours.
var cases = []struct {
	name string
	run  func(e *env)
}{
	{"version names a version and a hash", func(e *env) {
		v, err := e.client().Version(e.ctx)
		if err != nil || len(strings.Fields(v)) != 2 {
			e.t.Fatalf("version %q, %v", v, err)
		}
	}},
	{"a call of an older leader epoch is refused, naming both epochs", func(e *env) {
		at := func(epoch int64) *runner.Client { c := *e.client(); c.Epoch = epoch; return &c }
		if _, err := at(5).List(e.ctx); err != nil {
			e.t.Fatalf("list at epoch 5: %v", err)
		}
		const both = "epoch 4 is lower than epoch 5"
		err := at(4).Start(e.ctx, runner.Spec{ID: "old", Command: e.tg.Command(Program{Forever: true})})
		e.wantExit("start at epoch 4", err, runner.CodeFenced, both)
		if !runner.IsFenced(err) {
			e.t.Fatalf("start at epoch 4: IsFenced(%v) is false", err)
		}
		_, err = at(4).List(e.ctx)
		e.wantExit("list at epoch 4", err, runner.CodeFenced, both)
		if _, ok := e.client().Exec.(runner.WatchExecutor); ok {
			// Refused at once; a watch let in would run until its
			// context ends.
			ctx, cancel := context.WithTimeout(e.ctx, 20*time.Second)
			err = at(4).Watch(ctx, func() {}, func(string, *runner.Status) {})
			cancel()
			e.wantExit("watch at epoch 4", err, runner.CodeFenced, both)
		}
		replies, err := at(4).Batch(e.ctx, []runner.Request{{Verb: "start", ID: "old", Spec: e.specJSON("old", Program{Forever: true})}})
		if err != nil || replies[0].Code != runner.CodeFenced || !strings.Contains(replies[0].Stderr, both) {
			e.t.Fatalf("batch start at epoch 4: %+v, %v; want code %d saying %q", replies, err, runner.CodeFenced, both)
		}
		if sts := e.list(); len(sts) != 0 {
			e.t.Fatalf("list after the refused starts: %+v", sts)
		}
		// The same epoch goes on; a call with none (a single dispatcher,
		// a tool) is not checked; a newer one raises it again.
		if err := at(5).Start(e.ctx, runner.Spec{ID: "new", Command: e.tg.Command(Program{Forever: true})}); err != nil {
			e.t.Fatalf("start at epoch 5: %v", err)
		}
		e.waitState("new", runner.StateRunning)
		if _, err := at(6).List(e.ctx); err != nil {
			e.t.Fatalf("list at epoch 6: %v", err)
		}
		err = at(5).Kill(e.ctx, "new", runner.SignalKill)
		e.wantExit("kill at epoch 5 after 6", err, runner.CodeFenced, "epoch 5 is lower than epoch 6")
		if st := e.waitState("new", runner.StateRunning); st.State != runner.StateRunning {
			e.t.Fatalf("after a refused kill: %+v", st)
		}
	}},
	{"a new runner lists nothing", func(e *env) {
		if sts := e.list(); len(sts) != 0 {
			e.t.Fatalf("list %+v", sts)
		}
	}},
	{"exit codes", func(e *env) {
		// 143 looks like TERM's code, but the command exits with it by
		// itself: no signal is reported.
		for _, code := range []int{0, 1, 3, 127, exitTerm} {
			id := "exit-" + strconv.Itoa(code)
			e.start(id, Program{Exit: code})
			st := e.waitState(id, runner.StateExited)
			if st.ExitCode != code || st.Signal != "" || st.PID <= 0 || st.StartedAt.IsZero() || st.FinishedAt.Before(st.StartedAt) {
				e.t.Fatalf("exit %d: status %+v", code, st)
			}
		}
	}},
	{"a command that cannot run is refused, saying why", func(e *env) {
		err := e.client().Start(e.ctx, runner.Spec{ID: "nope", Command: e.tg.Command(Program{Unrunnable: true})})
		e.wantExit("start", err, 1, "cannot run")
		if sts := e.list(); len(sts) != 0 {
			e.t.Fatalf("list after a refused start: %+v", sts)
		}
		codes, replies := e.batch(runner.Request{Verb: "start", ID: "nope", Spec: e.specJSON("nope", Program{Unrunnable: true})})
		e.wantCodes("start in a batch", codes, []int{1}, replies)
		if !strings.Contains(replies[0].Stderr, "cannot run") {
			e.t.Fatalf("batch reply %+v", replies[0])
		}
		if sts := e.list(); len(sts) != 0 {
			e.t.Fatalf("list after a refused start: %+v", sts)
		}
	}},
	{"a signal from outside the runner is reported", func(e *env) {
		e.start("victim", Program{Forever: true})
		e.ready("victim")
		st := e.waitState("victim", runner.StateRunning)
		e.tg.Signal(e.t, st, runner.SignalTerm)
		if st := e.waitState("victim", runner.StateExited); st.ExitCode != exitTerm || st.Signal != runner.SignalTerm {
			e.t.Fatalf("after an outside TERM: %+v, want exit %d and signal TERM", st, exitTerm)
		}
	}},
	{"running container", func(e *env) {
		e.start("run", Program{Forever: true})
		st := e.waitState("run", runner.StateRunning)
		if st.PID <= 0 || st.StartedAt.IsZero() || !st.FinishedAt.IsZero() || st.ExitCode != 0 {
			e.t.Fatalf("status %+v", st)
		}
	}},
	{"list is sorted by id", func(e *env) {
		for _, id := range []string{"m", "b", "z", "a"} {
			e.start(id, Program{Exit: 0})
		}
		if got := ids(e.list()); !slices.Equal(got, []string{"a", "b", "m", "z"}) {
			e.t.Fatalf("list ids %v", got)
		}
	}},
	{"kill TERM and KILL", func(e *env) {
		e.start("t", Program{Forever: true})
		e.start("k", Program{Forever: true})
		e.ready("t")
		e.ready("k")
		e.wantExit("kill TERM", e.client().Kill(e.ctx, "t", runner.SignalTerm), 0, "")
		e.wantExit("kill KILL", e.client().Kill(e.ctx, "k", runner.SignalKill), 0, "")
		if st := e.waitState("t", runner.StateExited); st.ExitCode != exitTerm || st.Signal != runner.SignalTerm || st.FinishedAt.IsZero() {
			e.t.Fatalf("after TERM: %+v", st)
		}
		if st := e.waitState("k", runner.StateExited); st.ExitCode != exitKill || st.Signal != runner.SignalKill || st.FinishedAt.IsZero() {
			e.t.Fatalf("after KILL: %+v", st)
		}
		// An exited container takes any signal without complaint and
		// keeps its exit.
		e.wantExit("kill of an exited container", e.client().Kill(e.ctx, "t", runner.SignalKill), 0, "")
		if st, _ := e.status("t"); st.ExitCode != exitTerm {
			e.t.Fatalf("exit changed by a later kill: %+v", st)
		}
	}},
	{"a container ignoring TERM ends on KILL", func(e *env) {
		e.start("deaf", Program{Forever: true, IgnoreTerm: true})
		e.ready("deaf")
		e.wantExit("kill TERM", e.client().Kill(e.ctx, "deaf", runner.SignalTerm), 0, "")
		if st, _ := e.status("deaf"); st.State != runner.StateRunning {
			e.t.Fatalf("ended on TERM: %+v", st)
		}
		e.wantExit("kill KILL", e.client().Kill(e.ctx, "deaf", runner.SignalKill), 0, "")
		// Had TERM ended it, it would report TERM's code.
		if st := e.waitState("deaf", runner.StateExited); st.ExitCode != exitKill {
			e.t.Fatalf("status %+v, want exit %d", st, exitKill)
		}
	}},
	{"unknown container", func(e *env) {
		e.wantExit("kill", e.client().Kill(e.ctx, "ghost", runner.SignalTerm), 1, "no such container")
		_, err := e.client().Logs(e.ctx, "ghost", 0, 0)
		e.wantExit("logs", err, 1, "no such container")
		e.wantExit("forget", e.client().Forget(e.ctx, "ghost"), 1, "no such container")
	}},
	{"logs and their tail", func(e *env) {
		e.start("talk", Program{Exit: 2})
		e.waitState("talk", runner.StateExited)
		all, err := e.client().Logs(e.ctx, "talk", 0, 0)
		if err != nil || len(all.Data) == 0 || !bytes.HasSuffix(all.Data, []byte("\n")) || all.Dropped != 0 {
			e.t.Fatalf("logs %q (dropped %d), %v", all.Data, all.Dropped, err)
		}
		lines := strings.SplitAfter(string(all.Data), "\n")
		last := lines[len(lines)-2]
		for tail, want := range map[int]string{1: last, len(lines) - 1: string(all.Data), 1000: string(all.Data)} {
			got, err := e.client().Logs(e.ctx, "talk", tail, 0)
			if err != nil || string(got.Data) != want || got.Dropped != 0 {
				e.t.Fatalf("logs --tail %d = %q (dropped %d), %v; want %q", tail, got.Data, got.Dropped, err, want)
			}
		}
	}},
	{"logs over max_bytes keep their end and say what they dropped", func(e *env) {
		e.start("loud", Program{Exit: 0, Output: 10_000})
		e.waitState("loud", runner.StateExited)
		all, err := e.client().Logs(e.ctx, "loud", 0, 0)
		if err != nil || len(all.Data) < 10_000 || all.Dropped != 0 {
			e.t.Fatalf("logs: %d bytes, dropped %d, %v; want at least 10000, none dropped", len(all.Data), all.Dropped, err)
		}
		const limit = 4096
		drop := runner.DroppedFor(int64(len(all.Data)), limit)
		if drop == 0 || drop%runner.OutputCutUnit != 0 || int64(len(all.Data))-drop > limit {
			e.t.Fatalf("DroppedFor(%d, %d) = %d", len(all.Data), limit, drop)
		}
		lines := strings.SplitAfter(string(all.Data), "\n")
		for _, c := range []struct {
			tail     int
			want     string
			wantDrop int64
		}{
			{0, string(all.Data[drop:]), drop},
			{1_000_000, string(all.Data[drop:]), drop}, // the tail reaches the cut
			{1, lines[len(lines)-2], 0},                // it does not
		} {
			got, err := e.client().Logs(e.ctx, "loud", c.tail, limit)
			if err != nil || string(got.Data) != c.want || got.Dropped != c.wantDrop {
				e.t.Fatalf("logs --tail %d --max-bytes %d: %d bytes, dropped %d, %v; want %d bytes, dropped %d",
					c.tail, limit, len(got.Data), got.Dropped, err, len(c.want), c.wantDrop)
			}
		}
		// What the output fits in is returned whole.
		got, err := e.client().Logs(e.ctx, "loud", 0, int64(len(all.Data)))
		if err != nil || !bytes.Equal(got.Data, all.Data) || got.Dropped != 0 {
			e.t.Fatalf("logs --max-bytes of its size: %d bytes, dropped %d, %v", len(got.Data), got.Dropped, err)
		}
	}},
	{"a batch's logs replies stop at MaxBatchOutput", func(e *env) {
		// Each output is over half the budget: the first two are served
		// (the second passes it), the third is deferred, not failed.
		n := runner.MaxBatchOutput/2 + 1000
		for _, id := range []string{"big1", "big2", "big3"} {
			e.start(id, Program{Exit: 0, Output: n})
		}
		for _, id := range []string{"big1", "big2", "big3"} {
			e.waitState(id, runner.StateExited)
		}
		codes, replies := e.batch(
			runner.Request{Verb: "logs", ID: "big1"},
			runner.Request{Verb: "logs", ID: "big2"},
			runner.Request{Verb: "logs", ID: "big3"},
			runner.Request{Verb: "list"},
		)
		e.wantCodes("logs batch", codes, []int{0, 0, runner.CodeDeferred, 0}, replies[3:])
		if len(replies[0].Stdout) < n || len(replies[1].Stdout) < n || !replies[2].Deferred() || len(replies[2].Stdout) != 0 {
			e.t.Fatalf("replies of %d, %d and %d bytes, the third deferred: %v", len(replies[0].Stdout), len(replies[1].Stdout), len(replies[2].Stdout), replies[2].Deferred())
		}
		// Asked again alone, it is served.
		codes, replies = e.batch(runner.Request{Verb: "logs", ID: "big3"})
		if codes[0] != 0 || len(replies[0].Stdout) < n {
			e.t.Fatalf("big3 asked again: code %d, %d bytes", codes[0], len(replies[0].Stdout))
		}
	}},
	{"forget", func(e *env) {
		e.start("done", Program{Exit: 0})
		e.start("busy", Program{Forever: true})
		e.waitState("done", runner.StateExited)
		e.waitState("busy", runner.StateRunning)
		e.wantExit("forget of a running container", e.client().Forget(e.ctx, "busy"), 1, "running")
		if st, ok := e.status("busy"); !ok || st.State != runner.StateRunning {
			e.t.Fatalf("after a refused forget: %+v (listed %v)", st, ok)
		}
		e.wantExit("forget", e.client().Forget(e.ctx, "done"), 0, "")
		if got := ids(e.list()); !slices.Equal(got, []string{"busy"}) {
			e.t.Fatalf("list after forget: %v", got)
		}
		e.wantExit("forget again", e.client().Forget(e.ctx, "done"), 1, "no such container")
		// A forgotten id can be started again.
		e.start("done", Program{Exit: 5})
		if st := e.waitState("done", runner.StateExited); st.ExitCode != 5 {
			e.t.Fatalf("restarted: %+v", st)
		}
	}},
	{"duplicate start", func(e *env) {
		e.start("dup", Program{Forever: true})
		st := e.waitState("dup", runner.StateRunning)
		err := e.client().Start(e.ctx, runner.Spec{ID: "dup", Command: e.tg.Command(Program{Exit: 0})})
		e.wantExit("second start", err, 1, "already exists")
		if st2 := e.waitState("dup", runner.StateRunning); st2.PID != st.PID || !st2.StartedAt.Equal(st.StartedAt) {
			e.t.Fatalf("the second start changed the container: %+v, was %+v", st2, st)
		}
	}},
	{"invalid ids and arguments", func(e *env) {
		for _, id := range []string{"..", ".", "../x", "a/b", strings.Repeat("a", 129)} {
			for _, verb := range []string{"kill", "logs", "forget", "start"} {
				spec, _ := json.Marshal(runner.Spec{ID: id, Command: e.tg.Command(Program{Exit: 0})})
				_, err := e.raw(verb+" "+id, string(spec))
				e.wantExit(verb+" "+id, err, 2, "")
			}
		}
		for _, line := range []string{"bogus", "list c1 extra", "list ..", "kill c1 --signal HUP", "logs c1 --tail -1", "start"} {
			_, err := e.raw(line, "")
			e.wantExit(line, err, 2, "")
		}
		if sts := e.list(); len(sts) != 0 {
			e.t.Fatalf("list %+v", sts)
		}
	}},
	{"bad specs", func(e *env) {
		for name, spec := range map[string]string{
			"id mismatch":   `{"id":"c2","command":["true"]}`,
			"truncated":     `{"id":"c1","command":["true"]`,
			"unknown field": `{"id":"c1","command":["true"],"shell":"sh"}`,
			"no command":    `{"id":"c1","command":[]}`,
			"trailing data": `{"id":"c1","command":["true"]} {}`,
			"empty":         ``,
		} {
			_, err := e.raw("start c1", spec)
			e.wantExit(name, err, 2, "")
		}
		if sts := e.list(); len(sts) != 0 {
			e.t.Fatalf("list %+v", sts)
		}
	}},
	{"batch of starts, kills and forgets", func(e *env) {
		start := func(id string, p Program) runner.Request {
			return runner.Request{Verb: "start", ID: id, Spec: e.specJSON(id, p)}
		}
		codes, replies := e.batch(
			start("b1", Program{Exit: 4}),
			start("b2", Program{Forever: true}),
			start("b1", Program{Exit: 0}), // a duplicate within the batch
			runner.Request{Verb: "list"},
			runner.Request{Verb: "kill", ID: "nope", Signal: runner.SignalTerm},
			runner.Request{Verb: "forget", ID: "b2"}, // running
			start("b3", Program{Forever: true}),
		)
		e.wantCodes("first batch", codes, []int{0, 0, 1, 0, 1, 1, 0}, replies)
		if !strings.Contains(replies[2].Stderr, "already exists") || !strings.Contains(replies[4].Stderr, "no such container") {
			e.t.Fatalf("replies %+v", replies)
		}
		listed, err := runner.ParseList(replies[3].Stdout)
		if err != nil || !slices.Equal(ids(listed), []string{"b1", "b2"}) {
			e.t.Fatalf("list in the batch: %+v, %v", listed, err)
		}
		e.waitState("b1", runner.StateExited)
		e.ready("b2")
		e.ready("b3")
		codes, replies = e.batch(
			runner.Request{Verb: "kill", ID: "b2", Signal: runner.SignalKill},
			runner.Request{Verb: "kill", ID: "b3", Signal: runner.SignalTerm},
			runner.Request{Verb: "logs", ID: "b1", Tail: 1},
			runner.Request{Verb: "forget", ID: "b1"},
		)
		e.wantCodes("second batch", codes, []int{0, 0, 0, 0}, replies)
		if len(replies[2].Stdout) == 0 {
			e.t.Fatalf("logs in a batch: %+v", replies[2])
		}
		if st := e.waitState("b2", runner.StateExited); st.ExitCode != exitKill {
			e.t.Fatalf("b2: %+v", st)
		}
		if st := e.waitState("b3", runner.StateExited); st.ExitCode != exitTerm {
			e.t.Fatalf("b3: %+v", st)
		}
		codes, replies = e.batch(
			runner.Request{Verb: "forget", ID: "b2"},
			runner.Request{Verb: "forget", ID: "b3"},
			runner.Request{Verb: "forget", ID: "b1"}, // already forgotten
			runner.Request{Verb: "list"},
		)
		e.wantCodes("third batch", codes, []int{0, 0, 1, 0}, replies)
		if len(bytes.TrimSpace(replies[3].Stdout)) != 0 {
			e.t.Fatalf("list after forgetting all: %q", replies[3].Stdout)
		}
	}},
	{"StartMany", func(e *env) {
		specs := []runner.Spec{
			{ID: "m1", Command: e.tg.Command(Program{Exit: 0})},
			{ID: "m/2", Command: e.tg.Command(Program{Exit: 0})}, // refused before sending
			{ID: "m3", Command: e.tg.Command(Program{Exit: 6})},
		}
		errs, err := e.client().StartMany(e.ctx, specs)
		if err != nil || len(errs) != 3 || errs[0] != nil || errs[1] == nil || errs[2] != nil {
			e.t.Fatalf("StartMany: %v, %v", errs, err)
		}
		if st := e.waitState("m3", runner.StateExited); st.ExitCode != 6 {
			e.t.Fatalf("m3: %+v", st)
		}
	}},
	{"bad requests in a batch", func(e *env) {
		codes, replies := e.batch(
			runner.Request{Verb: "kill", ID: "../x", Signal: runner.SignalKill},
			runner.Request{Verb: "bogus"},
			runner.Request{Verb: "batch"},
			runner.Request{Verb: "serve"},
			runner.Request{Verb: "start", ID: "c1", Spec: json.RawMessage(`{"id":"c2","command":["true"]}`)},
			runner.Request{Verb: "start", ID: "c1"},
			runner.Request{Verb: "list"},
		)
		e.wantCodes("bad requests", codes, []int{2, 2, 2, 2, 2, 2, 0}, replies)
		// A line that is not a request fails alone.
		out, err := e.raw("batch", "{\"verb\":\"list\"}\nnot json\n{\"verb\":\"list\"}\n")
		if err != nil {
			e.t.Fatalf("batch with a bad line: %v", err)
		}
		var got []int
		dec := json.NewDecoder(bytes.NewReader(out))
		for dec.More() {
			var r runner.Reply
			if err := dec.Decode(&r); err != nil {
				e.t.Fatalf("reply: %v in %q", err, out)
			}
			got = append(got, r.Code)
		}
		if !slices.Equal(got, []int{0, 2, 0}) {
			e.t.Fatalf("reply codes %v, want [0 2 0]", got)
		}
	}},
	{"a lost runner state", func(e *env) {
		e.start("l1", Program{Forever: true})
		e.start("l2", Program{Exit: 0})
		e.waitState("l1", runner.StateRunning)
		e.waitState("l2", runner.StateExited)
		e.tg.Lose(e.t)
		if sts := e.list(); len(sts) != 0 {
			e.t.Fatalf("list after the state was lost: %+v", sts)
		}
		e.wantExit("kill", e.client().Kill(e.ctx, "l1", runner.SignalKill), 1, "no such container")
		e.wantExit("forget", e.client().Forget(e.ctx, "l2"), 1, "no such container")
		e.start("l1", Program{Exit: 9})
		if st := e.waitState("l1", runner.StateExited); st.ExitCode != 9 {
			e.t.Fatalf("started again: %+v", st)
		}
	}},
	{"a crashed container", func(e *env) {
		e.start("crash", Program{Forever: true})
		st := e.waitState("crash", runner.StateRunning)
		e.tg.Crash(e.t, "crash")
		got := e.waitState("crash", runner.StateExited)
		// No exit code of the program's own: lost, and why. A runner
		// that cannot read a boot id cannot rule out a reboot.
		if got.ExitCode != -1 || got.PID != st.PID || !got.StartedAt.Equal(st.StartedAt) || !got.FinishedAt.IsZero() ||
			(got.Lost != runner.LostKilled && got.Lost != runner.LostUnknown) {
			e.t.Fatalf("crashed: %+v, was %+v; want exit -1 and lost %q", got, st, runner.LostKilled)
		}
		e.wantExit("kill", e.client().Kill(e.ctx, "crash", runner.SignalKill), 0, "")
		e.wantExit("forget", e.client().Forget(e.ctx, "crash"), 0, "")
	}},
}
