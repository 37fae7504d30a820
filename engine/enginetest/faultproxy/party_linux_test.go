// Tests of naming a connection's party by the process that opened it.

package faultproxy

import (
	"os"
	"sync"
	"testing"
	"time"

	"dispatch-tui/engine/enginetest/wait"
)

func TestFaultsAreByParty(t *testing.T) {
	me := os.Getpid()
	var mu sync.Mutex
	pids := map[string]int{"init": 1, "me": me}
	p := newProxy(t, Options{Party: ByProcess(func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		return map[string]int{"init": pids["init"], "me": pids["me"]}
	})})
	p.Cut("init")
	c := dial(t, p)
	if err := roundTrip(c, "mine"); err != nil {
		t.Fatalf("another party's cut reached this process's connection: %v", err)
	}
	wait.Until(t, "4 bytes counted up for me", 10*time.Second, func() bool { return p.Stats("me").Up == 4 })
	if s := p.Stats("me"); s.Conns != 1 {
		t.Fatalf("this process's stats: %+v, want its one connection and 4 bytes", s)
	}
	p.Cut("me")
	if !dead(c) {
		t.Fatal("this process's connection survived its cut")
	}
	// A connection no named process holds is the party "".
	mu.Lock()
	delete(pids, "me")
	mu.Unlock()
	if err := roundTrip(dial(t, p), "nobody's"); err != nil {
		t.Fatal(err)
	}
	wait.Until(t, "8 bytes counted up for nobody", 10*time.Second, func() bool { return p.Stats("").Up == 8 })
	if s := p.Stats(""); s.Conns != 1 {
		t.Fatalf("the unnamed party's stats: %+v", s)
	}
}
