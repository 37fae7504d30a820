// A running Env whose store cannot write: its state dir on a full tmpfs.

package enginetest

import (
	"os"
	"strings"
	"testing"
	"time"

	"dispatch-tui/cloud/fake"
	"dispatch-tui/engine"
	"dispatch-tui/engine/config"
	"dispatch-tui/engine/enginetest/fulldisk"
	"dispatch-tui/engine/queue"
)

// FullStore is an Env whose state dir is a 4 MiB tmpfs (a real bbolt file)
// that a filler file has made full while containers ran.
type FullStore struct {
	*Env
	IDs    []string // the containers started before the disk filled up
	filler string
}

// NewFullStore starts an Env (cfg's state dir replaced by the tmpfs), runs
// containers whose records are large (16 KiB of environment each) for 10 s
// of clock time, fills the disk once they run, and steps until the store
// reports it cannot write: they all end at once, and the write of their ends
// needs more pages than the store has free. It needs root (fulldisk.Tmpfs).
func NewFullStore(t testing.TB, cfg *config.Config, opts engine.Options) *FullStore {
	t.Helper()
	cfg.Dispatcher.StateDir = fulldisk.Tmpfs(t, "4m")
	f := &FullStore{Env: New(t, cfg, fake.Options{}, opts)}
	pad := map[string]string{"PAD": strings.Repeat("x", 16<<10)}
	for range 8 {
		f.IDs = append(f.IDs, f.Submit(queue.Spec{Command: Cmd(10 * time.Second), Env: pad}))
	}
	f.Until("the containers run", 60, func() bool {
		for _, id := range f.IDs {
			if f.Container(id).State != queue.Running {
				return false
			}
		}
		return true
	})
	f.filler = fulldisk.Fill(t, cfg.Dispatcher.StateDir, 0)
	f.Until("the store cannot write", 30, func() bool {
		return !f.Engine.StoreHealth().UnavailableSince.IsZero()
	})
	return f
}

// Free makes room on the disk again.
func (f *FullStore) Free() {
	f.T.Helper()
	if err := os.Remove(f.filler); err != nil {
		f.T.Fatal(err)
	}
}
