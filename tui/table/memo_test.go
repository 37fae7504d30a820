package table

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// A Fold's kept answers are those given for the same key of the same
// slot, never another's: more keys than it has places, small ones,
// sizes and any, in slots whose keys are alike, and slots past
// MemoSlots, whose answers it does not keep.
func TestFoldKnownIsRemembered(t *testing.T) {
	rng := rand.New(rand.NewPCG(32, 8))
	f := newFold("42")
	answer := func(slot int, key uint64) bool { return (key+uint64(slot))%3 == 0 }
	keyOf := []func() uint64{
		func() uint64 { return uint64(rng.IntN(3 * memoKeys)) },
		func() uint64 { return uint64(1+rng.IntN(64)) << (20 + rng.IntN(20)) },
		rng.Uint64,
	}
	kept := 0
	for range 40 * memoKeys {
		slot, key := rng.IntN(MemoSlots+4), keyOf[rng.IntN(len(keyOf))]()
		held, ok := f.Known(slot, key)
		if !ok && held {
			t.Fatalf("slot %d, key %d: Known says held, and none kept", slot, key)
		}
		if ok {
			kept++
			if held != answer(slot, key) {
				t.Fatalf("slot %d, key %d: Known says %v, Remember was told %v", slot, key, held, answer(slot, key))
			}
			continue
		}
		f.Remember(slot, key, answer(slot, key))
		if held, ok := f.Known(slot, key); slot < MemoSlots && (!ok || held != answer(slot, key)) {
			t.Fatalf("slot %d, key %d: Known says %v, %v just after Remember(%v)", slot, key, held, ok, answer(slot, key))
		}
	}
	if kept == 0 {
		t.Fatal("no answer was kept: the test tells nothing")
	}
}

// InShared keeps an answer by a string's address and length: two
// strings at one address (one a prefix of the other) are searched apart,
// and InSmall tells texts apart by their length too.
func TestFoldSharedByAddressAndLength(t *testing.T) {
	s := strings.Repeat("x", 12) + "Ab"
	f := newFold("ab")
	for _, c := range []struct {
		s    string
		want bool
	}{{s[:12], false}, {s, true}, {s[:12], false}, {s[:13], false}, {s, true}, {"", false}} {
		if got := f.InShared(c.s); got != c.want {
			t.Fatalf("InShared(%q) = %v, want %v", c.s, got, c.want)
		}
	}
	g := newFold("\x00") // ASCII, and what only a text's length may tell
	for _, c := range []struct {
		b    string
		want bool
	}{{"a", false}, {"a\x00", true}, {"a", false}, {"b\x00\x00", true}, {"long \x00 texts too", true}} {
		if got := g.InSmall(0, []byte(c.b)); got != c.want {
			t.Fatalf("InSmall(%q) = %v, want %v", c.b, got, c.want)
		}
	}
}
