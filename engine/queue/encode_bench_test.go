package queue

import (
	"dispatch-tui/engine/view"
	"testing"
	"time"
)

// benchRecords are the records a churning pass writes: containers just
// started on an instance and containers just completed, with times from a
// real clock (nanoseconds set), and the state events that go with them.
func benchRecords() ([]Container, []Event) {
	now := time.Date(2026, 11, 25, 13, 24, 5, 123456789, time.UTC)
	pre := false
	var cs []Container
	var es []Event
	for i := range 64 {
		at := now.Add(time.Duration(i) * 7919 * time.Microsecond)
		c := Container{
			State:    Running,
			Priority: 1 + i%5,
			ContainerBody: view.ContainerBody{
				ID:            "c-" + "0123456789abcdef"[i%16:] + "0123456789abcdef"[:i%16],
				Command:       []string{"true"},
				CreatedAt:     at.Add(-time.Hour),
				LockedAt:      at,
				StartedAt:     at,
				MaxAttempts:   3,
				Attempts:      1,
				RestartPolicy: RestartNever,
				InstanceType:  "m5.xlarge",
				InstanceID:    "i-0a1b2c3d4e5f60718",
				Scheduling:    Scheduling{Preemptible: &pre},
			},
			RuntimeConstraints: Constraints{VCPUs: 1 + i%8, RAM: int64(1+i%16) << 30, Scratch: 10 << 30},
			FirstSeenAt:        at.Add(-time.Hour),
			ContainerTail: view.ContainerTail{
				Seq: uint64(1_000_000 + i),
			},
		}
		c.Name = c.ID
		if i%2 == 1 {
			code := 0
			c.State, c.ExitCode, c.FinishedAt = Complete, &code, at.Add(time.Second)
		}
		cs = append(cs, c)
		es = append(es,
			Event{Seq: uint64(5_000_000 + 2*i), Time: at, Actor: "scheduler", Kind: "state", Target: c.ID, Action: string(c.State)},
			Event{Seq: uint64(5_000_001 + 2*i), Time: at, Actor: "operator:alice", Kind: "verb", Target: c.ID, Action: "priority", Reason: "set priority 3"})
	}
	return cs, es
}

// BenchmarkAppendContainer encodes the records of a pass (pass), and
// records with the rarer parts: an environment, labels, a maximum run time,
// and a name that needs escapes (rich).
func BenchmarkAppendContainer(b *testing.B) {
	cs, _ := benchRecords()
	for _, bc := range []struct {
		name string
		cs   []Container
	}{{"pass", cs}, {"rich", richRecords(cs)}} {
		b.Run(bc.name, func(b *testing.B) {
			buf := make([]byte, 0, 1<<16)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				var err error
				if buf, err = appendContainer(buf[:0], &bc.cs[i%len(bc.cs)]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// richRecords are cs with the rarer parts: an environment, constraints,
// a maximum run time, and a name that needs escapes.
func richRecords(cs []Container) []Container {
	rich := make([]Container, len(cs))
	for i, c := range cs {
		c.Env = map[string]string{"HOME": "/home/job", "PATH": "/usr/local/bin:/usr/bin:/bin", "TASK": c.ID, "LANG": "C.UTF-8"}
		c.Scheduling.Constraints = map[string]string{"zone": "eu-west-1b", "gpu": "none"}
		c.Scheduling.MaxRunTime = Duration(2*time.Hour + 30*time.Minute)
		c.Name = "résumé <" + c.ID + ">"
		c.Command = []string{"sh", "-c", "run-task --input /data/in --output /data/out"}
		rich[i] = c
	}
	return rich
}

func BenchmarkAppendEvent(b *testing.B) {
	_, es := benchRecords()
	buf := make([]byte, 0, 1<<16)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		var err error
		if buf, err = appendEvent(buf[:0], &es[i%len(es)]); err != nil {
			b.Fatal(err)
		}
	}
}
