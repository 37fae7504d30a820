package tui

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/view"
	"dispatch-tui/engine/worker"
	"dispatch-tui/tui/backend"

	tea "charm.land/bubbletea/v2"
)

var t0 = time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)

func fixedClock() time.Time { return t0 }

type call struct{ kind, id, what string }

// fakeBackend serves a settable snapshot and records verbs.
type fakeBackend struct {
	mu    sync.Mutex
	snap  *backend.Snapshot
	calls []call
	fail  map[string]error
	logs  string
	bulks [][]string // the ids of each ContainersVerb call
	// onBulk, if set, is called (unlocked) after each ContainersVerb call
	// has recorded its ids.
	onBulk func()
	// cost is the report Cost serves (by is what it was last asked by);
	// costs what ContainerCost serves.
	cost      *view.CostReport
	by        string
	costs     map[string]float64
	costCalls int
	// full are the records Container serves beside the snapshot's, for
	// a snapshot of rows alone (as a remote backend sends).
	full map[string]view.Container
}

func (f *fakeBackend) Describe() string { return "fake (test)" }
func (f *fakeBackend) Snapshot(context.Context) (*backend.Snapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.snap == nil {
		return nil, errors.New("no snapshot")
	}
	return f.snap, nil
}
func (f *fakeBackend) Changes(ctx context.Context) <-chan struct{} {
	ch := make(chan struct{})
	go func() { <-ctx.Done(); close(ch) }()
	return ch
}
func (f *fakeBackend) Container(_ context.Context, id string) (view.Container, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.snap != nil {
		for _, c := range f.snap.Containers {
			if c.ID == id {
				return c, nil
			}
		}
		if f.full != nil {
			if c, ok := f.full[id]; ok {
				return c, nil
			}
		}
	}
	return view.Container{}, view.NewError(view.KindNotFound, "no such container")
}
func (f *fakeBackend) Logs(_ context.Context, id string, tail int) ([]byte, error) {
	return []byte(f.logs), nil
}

func (f *fakeBackend) Cost(_ context.Context, by string) (*view.CostReport, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.by = by
	f.costCalls++
	if f.cost == nil {
		return nil, errors.New("no cost report")
	}
	return f.cost, nil
}
func (f *fakeBackend) ContainerCost(_ context.Context, id string) (float64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.costs[id], nil
}

// record notes a call: its kind, target and verb's name (or value).
func (f *fakeBackend) record(kind, id, what string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call{kind, id, what})
	return f.fail[id]
}
func (f *fakeBackend) InstanceVerb(_ context.Context, id string, v view.InstanceVerb, _ string) error {
	return f.record("instance", id, v.String())
}
func (f *fakeBackend) ContainerVerb(_ context.Context, id string, v view.ContainerVerb, _ string) error {
	return f.record("container", id, v.String())
}
func (f *fakeBackend) ContainersVerb(_ context.Context, ids []string, v view.ContainerVerb, p int, _ string) (map[string]error, error) {
	f.mu.Lock()
	f.bulks = append(f.bulks, slices.Clone(ids))
	f.mu.Unlock()
	if f.onBulk != nil {
		defer f.onBulk()
	}
	var failed map[string]error
	for _, id := range ids {
		var err error
		if v == view.ContainerPriority {
			err = f.record("priority", id, fmt.Sprint(p))
		} else {
			err = f.record("container", id, v.String())
		}
		if err != nil {
			if failed == nil {
				failed = map[string]error{}
			}
			failed[id] = err
		}
	}
	return failed, nil
}
func (f *fakeBackend) SetPriority(_ context.Context, id string, p int) error {
	return f.record("priority", id, fmt.Sprint(p))
}
func (f *fakeBackend) SetPaused(_ context.Context, paused bool, _ string) error {
	return f.record("paused", "scheduler", fmt.Sprint(paused))
}
func (f *fakeBackend) set(s *backend.Snapshot) { f.mu.Lock(); f.snap = s; f.mu.Unlock() }

var ctrStates = []queue.State{queue.Queued, queue.Queued, queue.Locked, queue.Running, queue.Running, queue.Complete, queue.Cancelled}

// fakeSnapshot builds a deterministic snapshot.
func fakeSnapshot(nInst, nCtr int) *backend.Snapshot {
	s := &backend.Snapshot{TakenAt: t0}
	s.Summary = view.Summary{Driver: "local", Instances: map[worker.State]int{}, Containers: map[queue.State]int{},
		QuotaLimit: 20, Behaviors: map[worker.IdleBehavior]int{}}
	istates := []worker.State{worker.StateRunning, worker.StateIdle, worker.StateBooting, worker.StateRunning, worker.StateShutdown}
	behav := []worker.IdleBehavior{worker.IdleRun, worker.IdleRun, worker.IdleRun, worker.IdleHold, worker.IdleDrain}
	for i := range nInst {
		v := view.Instance{
			ID: view.InstanceID(fmt.Sprintf("i-%04d", i)), Type: []string{"small", "medium", "large"}[i%3],
			ProviderType: "p" + []string{"small", "medium", "large"}[i%3], Address: fmt.Sprintf("127.0.0.1:%d", 2200+i),
			Price: []float64{0.02, 0.05, 0.1}[i%3], State: istates[i%len(istates)], IdleBehavior: behav[i%len(behav)],
			AppearedAt: t0.Add(-time.Duration(i+1) * 7 * time.Minute),
		}
		if v.State == worker.StateRunning {
			v.Containers = []string{fmt.Sprintf("c-%06d", i)}
		}
		if i%5 == 4 {
			v.LastError = "probe failed: connection refused"
		}
		s.Instances = append(s.Instances, v)
		s.Summary.Instances[v.State]++
		s.Summary.Behaviors[v.IdleBehavior]++
		if v.State != worker.StateShutdown {
			s.Summary.PricePerHour += v.Price
		}
	}
	s.Containers = make([]view.Container, 0, nCtr)
	for i := range nCtr {
		c := view.Container{
			ContainerBody: view.ContainerBody{
				ID:            fmt.Sprintf("c-%06d", i),
				Name:          fmt.Sprintf("job-%d", i),
				Command:       []string{"sleep", "10"},
				Attempts:      i % 2,
				MaxAttempts:   3,
				RestartPolicy: queue.RestartNever,
				CreatedAt:     t0.Add(-time.Duration(i%90+1) * time.Minute),
			},
			State:              ctrStates[i%len(ctrStates)],
			Priority:           1 + i%5,
			Held:               i%11 == 10,
			RuntimeConstraints: queue.Constraints{VCPUs: 1 + i%4, RAM: int64(1+i%3) << 30, Scratch: 10 << 30},
			FirstSeenAt:        t0.Add(-time.Duration(i%90+1) * time.Minute),
		}
		switch c.State {
		case queue.Queued:
			c.Reason, c.ReasonCode = fmt.Sprintf("position %d in queue", i+1), queue.ReasonPosition
			if c.Held {
				c.Reason, c.ReasonCode = "held", queue.ReasonHeld
			}
		case queue.Locked:
			c.Reason, c.ReasonCode = "waiting for i-0002 to boot", queue.ReasonBooting
			c.InstanceType = "small"
		case queue.Running:
			c.InstanceID, c.InstanceType = fmt.Sprintf("i-%04d", i%max(nInst, 1)), "small"
			c.StartedAt = c.CreatedAt.Add(time.Second)
		case queue.Complete:
			code := 0
			c.ExitCode = &code
			c.FinishedAt = t0.Add(-time.Second)
		case queue.Cancelled:
			c.Reason, c.ReasonCode = "killed by operator", queue.ReasonKilled
		}
		s.Containers = append(s.Containers, c)
		s.Summary.Containers[c.State]++
	}
	for i, n := range []string{"small", "medium", "large"} {
		ts := view.TypeSummary{Name: n, ProviderType: "p" + n, VCPUs: 1 << i, RAM: int64(1<<i) << 30,
			Scratch: 10 << 30, Price: []float64{0.02, 0.05, 0.1}[i], ByState: map[view.InstanceState]int{}}
		for _, v := range s.Instances {
			if v.Type == n {
				ts.Count++
				ts.ByState[v.State]++
			}
		}
		s.Types = append(s.Types, ts)
	}
	for i := range 10 {
		s.Events = append(s.Events, queue.Event{Seq: uint64(i + 1), Time: t0.Add(-time.Duration(10-i) * time.Second),
			Actor: "scheduler", Kind: "state", Target: fmt.Sprintf("c-%06d", i), Action: "Running"})
	}
	return s
}

func newTest(t testing.TB, opts Options) (*Model, *fakeBackend) {
	t.Helper()
	fb, ok := opts.Backend.(*fakeBackend)
	if !ok {
		fb = &fakeBackend{}
		opts.Backend = fb
	}
	if opts.Theme == "" {
		opts.Theme = "dark"
	}
	m, err := newModel(opts, fixedClock)
	if err != nil {
		t.Fatal(err)
	}
	m.tick = stillTick
	return m, fb
}

// load feeds one snapshot through the model as a fetch would.
func load(t testing.TB, m *Model, fb *fakeBackend, s *backend.Snapshot) {
	t.Helper()
	fb.set(s)
	m.fetching = false
	cmd := m.startFetch()
	m.Update(cmd())
}

func size(m *Model, w, h int) { m.Update(tea.WindowSizeMsg{Width: w, Height: h}) }

// key builds a key press as the terminal would report it.
func key(s string) tea.KeyPressMsg {
	switch s {
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "tab":
		return tea.KeyPressMsg{Code: tea.KeyTab}
	case "space":
		return tea.KeyPressMsg{Code: tea.KeySpace, Text: " "}
	case "backspace":
		return tea.KeyPressMsg{Code: tea.KeyBackspace}
	case "up":
		return tea.KeyPressMsg{Code: tea.KeyUp}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	case "pgdown":
		return tea.KeyPressMsg{Code: tea.KeyPgDown}
	case "ctrl+a":
		return tea.KeyPressMsg{Code: 'a', Mod: tea.ModCtrl}
	case "ctrl+d":
		return tea.KeyPressMsg{Code: 'd', Mod: tea.ModCtrl}
	case "shift+tab":
		return tea.KeyPressMsg{Code: tea.KeyTab, Mod: tea.ModShift}
	case "left":
		return tea.KeyPressMsg{Code: tea.KeyLeft}
	case "right":
		return tea.KeyPressMsg{Code: tea.KeyRight}
	case "home":
		return tea.KeyPressMsg{Code: tea.KeyHome}
	case "end":
		return tea.KeyPressMsg{Code: tea.KeyEnd}
	}
	r := []rune(s)[0]
	if r >= 'A' && r <= 'Z' {
		return tea.KeyPressMsg{Code: r + 'a' - 'A', Text: s, Mod: tea.ModShift, ShiftedCode: r}
	}
	return tea.KeyPressMsg{Code: r, Text: s}
}

// press sends keys and returns the last command.
func press(m *Model, ks ...string) tea.Cmd {
	var cmd tea.Cmd
	for _, k := range ks {
		_, cmd = m.Update(key(k))
	}
	return cmd
}

func typeText(m *Model, s string) {
	for _, r := range s {
		m.Update(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
}

// tickNotFired is what a timer armed in a test returns: timers never fire
// in these tests, so a poll or flash expiry happens only when a test sends
// its message itself.
type tickNotFired struct{}

// stillTick stands in for tea.Tick in tests.
func stillTick(time.Duration, func(time.Time) tea.Msg) tea.Cmd {
	return func() tea.Msg { return tickNotFired{} }
}

// runCmd runs a command and feeds back the messages it produces, skipping
// timers.
func runCmd(m *Model, cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	switch msg := cmd().(type) {
	case tea.BatchMsg:
		for _, c := range msg {
			runCmd(m, c)
		}
	case nil, tickNotFired:
	default:
		_, next := m.Update(msg)
		if _, isVerb := msg.(verbMsg); isVerb {
			runCmd(m, next)
		}
	}
}
