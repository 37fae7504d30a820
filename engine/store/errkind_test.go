package store_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"dispatch-tui/engine/store"
	"dispatch-tui/engine/view"
)

// The one classification: real system and network errors, and the
// SQLSTATEs PostgreSQL answers with, each wrapped as a store wraps them.
func TestKindOf(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, refused := net.Dial("tcp", addr)
	ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	<-ctx.Done()
	_, notDir := os.Create(filepath.Join(t.TempDir(), "no", "such"))
	for _, tc := range []struct {
		what string
		err  error
		want view.StoreErrorKind
	}{
		{"connection refused", refused, view.StoreUnavailable},
		{"a call past its deadline", ctx.Err(), view.StoreUnavailable},
		{"server shutting down (57P01)", &pgconn.PgError{Code: "57P01"}, view.StoreUnavailable},
		{"connection failure (08006)", &pgconn.PgError{Code: "08006"}, view.StoreUnavailable},
		{"disk full (53100)", &pgconn.PgError{Code: "53100"}, view.StoreFull},
		{"no space left on device", &os.PathError{Op: "write", Path: "x", Err: syscall.ENOSPC}, view.StoreFull},
		{"password refused (28P01)", &pgconn.PgError{Code: "28P01"}, view.StoreAuth},
		{"unique violation (23505)", &pgconn.PgError{Code: "23505"}, view.StoreOther},
		{"no such directory", notDir, view.StoreOther},
	} {
		if tc.err == nil {
			t.Fatalf("%s: setup made no error", tc.what)
		}
		if got := store.KindOf(fmt.Errorf("write events: %w", tc.err)); got != tc.want {
			t.Errorf("%s (%v): kind %s, want %s", tc.what, tc.err, got, tc.want)
		}
	}
}
