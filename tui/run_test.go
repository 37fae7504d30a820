package tui

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// TestCoalesce runs coalesce on synctest's fake clock, so "within the
// window" and "after the window" are exact instants rather than guesses
// about a busy machine's scheduler.
func TestCoalesce(t *testing.T) {
	const window = 50 * time.Millisecond
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		in := make(chan struct{})
		sent := make(chan struct{}, 10)
		done := make(chan struct{})
		go func() {
			coalesce(ctx, in, window, func() { sent <- struct{}{} })
			close(done)
		}()
		expectSends := func(when string, want int) {
			t.Helper()
			synctest.Wait()
			if got := len(sent); got != want {
				t.Fatalf("%s: %d sends, want %d", when, got, want)
			}
			for range want {
				<-sent
			}
		}

		in <- struct{}{}
		expectSends("a change after a quiet time, at once", 1)
		for range 100 {
			in <- struct{}{}
		}
		time.Sleep(window - time.Nanosecond)
		expectSends("100 more within the window, just before it ends", 0)
		time.Sleep(time.Nanosecond)
		expectSends("100 more within the window, when it ends", 1)
		time.Sleep(10 * window)
		expectSends("no change since", 0)

		in <- struct{}{}
		time.Sleep(window / 2)
		in <- struct{}{}
		expectSends("two changes half a window apart: the first", 1)
		time.Sleep(window / 2)
		expectSends("two changes half a window apart: the second at the window's end", 1)

		in <- struct{}{}
		close(in)
		<-done
		expectSends("a change still pending when the input closes", 1)
	})
}

// TestCoalesceStopsWithContext checks a pending change is dropped, and the
// goroutine returns, when the context ends before the window does.
func TestCoalesceStopsWithContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		in := make(chan struct{})
		var sends int
		done := make(chan struct{})
		go func() {
			coalesce(ctx, in, time.Second, func() { sends++ })
			close(done)
		}()
		in <- struct{}{} // sent at once
		in <- struct{}{} // pending until the window ends
		cancel()
		<-done
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if sends != 1 {
			t.Errorf("%d sends, want 1: the pending change sent after the context ended?", sends)
		}
	})
}
