// A database on a small disk of its own (a tablespace on a tmpfs), for
// tests of a database server whose disk fills up while the rest of the
// server, its WAL and the other tests' databases, keep their room.

package pgtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"dispatch-tui/engine/enginetest/fulldisk"
)

// SmallDatabase creates an empty database for t whose tables live in a
// tablespace on a tmpfs of size (as mount takes it: "32m"; the copy of
// the template database takes about 8 MiB of it). It returns the
// database's URL and the tmpfs's mount point, where fulldisk.Fill fills
// the disk as root. It needs root, as fulldisk.Tmpfs does; everything is
// dropped and unmounted at t's cleanup.
func SmallDatabase(t testing.TB, size string) (url, disk string) {
	t.Helper()
	fulldisk.NeedRoot(t)
	s := Start(t)
	n := dbSeq.Add(1)
	name := fmt.Sprintf("t%d_%d", os.Getpid(), n)
	// Under the server's root (0755 when run as root), so that the
	// server's user can reach it; t.TempDir's directories are private.
	disk = filepath.Join(s.root, "disk-"+name)
	if err := os.Mkdir(disk, 0o755); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() { os.Remove(disk) })
	fulldisk.Mount(t, disk, size)
	// The tablespace's directory must be the server user's and empty;
	// the filler goes beside it, the test's own.
	loc := filepath.Join(disk, "pg")
	if err := os.Mkdir(loc, 0o700); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	if err := s.own(loc); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	space := name + "_space"
	if err := s.exec(ctx, "CREATE TABLESPACE "+space+" LOCATION '"+loc+"'"); err != nil {
		t.Fatalf("pgtest: create a tablespace on %s: %v", loc, err)
	}
	// Cleanups run last first: the database goes before its tablespace,
	// and both before the unmount.
	t.Cleanup(func() { s.dropAtCleanup(t, "TABLESPACE IF EXISTS "+space) })
	if err := s.exec(ctx, "CREATE DATABASE "+name+" TABLESPACE "+space); err != nil {
		t.Fatalf("pgtest: create database in %s: %v", space, err)
	}
	t.Cleanup(func() { s.dropAtCleanup(t, "DATABASE IF EXISTS "+name+" WITH (FORCE)") })
	return s.URL(name), disk
}

// dropAtCleanup runs DROP what, logging a failure (the server's files go
// with it at the end anyway).
func (s *Server) dropAtCleanup(t testing.TB, what string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.exec(ctx, "DROP "+what); err != nil {
		t.Logf("pgtest: drop %s: %v", what, err)
	}
}
