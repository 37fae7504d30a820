package pgstore

import (
	"context"
	"testing"
	"time"

	"dispatch-tui/engine/enginetest/pgtest"
)

// TestLeaseRow: the lease row's rules, in the database's time: a held
// lease is refused to others but taken back at once by its own node (a
// restart, with a new epoch); renewals and releases of an old epoch
// change nothing; a released lease goes to the next node that asks.
func TestLeaseRow(t *testing.T) {
	s := open(t, pgtest.NewDatabase(t))
	defer s.Close()
	ctx := context.Background()
	h, err := s.Holder(ctx)
	if err != nil || h.Epoch != 0 || h.Node != "" || h.Valid {
		t.Fatalf("a new store's lease: %+v, %v; want none held, epoch 0", h, err)
	}
	won, ok, err := s.Acquire(ctx, "a", "https://a:7070", time.Minute)
	if err != nil || !ok || won.Epoch != 1 || won.ExpiredFor != 0 {
		t.Fatalf("first acquire: %+v, %v, %v; want epoch 1, expired for 0 (never held)", won, ok, err)
	}
	if other, ok, err := s.Acquire(ctx, "b", "https://b:7070", time.Minute); err != nil || ok || other.Left <= 0 || other.Left > time.Minute {
		t.Fatalf("b's acquire of a's running lease: %+v, %v, %v; want refused, with what the lease has left (under a minute)", other, ok, err)
	}
	won, ok, err = s.Acquire(ctx, "a", "https://a:7071", time.Minute)
	if err != nil || !ok || won.Epoch != 2 || won.ExpiredFor >= 0 {
		t.Fatalf("a's acquire of its own running lease: %+v, %v, %v; want epoch 2, a negative expired-for", won, ok, err)
	}
	if ok, err := s.Renew(ctx, 1, time.Minute); err != nil || ok {
		t.Fatalf("renewal by the old epoch 1: %v, %v; want refused", ok, err)
	}
	if err := s.Release(ctx, 1); err != nil {
		t.Fatal(err)
	}
	h, err = s.Holder(ctx)
	if err != nil || h.Epoch != 2 || h.Node != "a" || h.Address != "https://a:7071" || !h.Valid || !h.ExpiresAt.After(h.RenewedAt) {
		t.Fatalf("after the old epoch's release: %+v, %v; want a's epoch 2 still held", h, err)
	}
	if ok, err := s.Renew(ctx, 2, time.Minute); err != nil || !ok {
		t.Fatalf("renewal by epoch 2: %v, %v", ok, err)
	}
	if err := s.Release(ctx, 2); err != nil {
		t.Fatal(err)
	}
	won, ok, err = s.Acquire(ctx, "b", "https://b:7070", time.Minute)
	if err != nil || !ok || won.Epoch != 3 || won.ExpiredFor < 0 {
		t.Fatalf("b's acquire after the release: %+v, %v, %v; want epoch 3", won, ok, err)
	}
}
