// "runner watch" on Linux: exits announced as they are recorded, learnt from
// inotify on the state directory, so that an idle instance costs no CPU
// (no timer, no polling; docs/design.md §7.3).

package agent

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"dispatch-tui/engine/runner"
)

// announceExit tells the watchers of the state directory that the container
// in dir has its exit recorded: it sets the directory's access time alone,
// which inotify reports to a watch on its parent as an access (IN_ACCESS)
// of that directory. The modification time, which list reads for a
// starting container, is left alone. Nobody watching costs one system
// call.
func announceExit(dir string) {
	now := unix.NsecToTimespec(time.Now().UnixNano())
	_ = unix.UtimesNanoAt(unix.AT_FDCWD, dir, []unix.Timespec{now, {Nsec: unix.UTIME_OMIT}}, 0)
}

// watchMask: a container's directory announced (announceExit; reading the
// state directory itself, as list does, is an access with no name),
// forgotten (moved to the free pool) or removed, and the state directory
// itself gone.
const watchMask = unix.IN_ACCESS | unix.IN_MOVED_FROM | unix.IN_DELETE |
	unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR | unix.IN_EXCL_UNLINK

// watch runs "runner watch": it writes runner.WatchReady once it watches
// the state directory, then "exited <id> <list line>" for each container whose exit is
// recorded from then on, once per container (again only after a forget
// and a new start under the same id). It ends when stdin ends (the session
// closed), with 1 when the state directory is removed or stdout fails.
func (a *agent) watch(stdin io.Reader) int {
	root, _, err := a.stateRoot(true)
	if err != nil {
		return a.fail(1, "runner watch: %v", err)
	}
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return a.fail(1, "runner watch: inotify: %v", err)
	}
	// Non-blocking, so that the runtime's poller waits for it and Close
	// (at the end of stdin) ends a read in progress.
	ino := os.NewFile(uintptr(fd), "inotify")
	defer ino.Close()
	if _, err := unix.InotifyAddWatch(fd, root, watchMask); err != nil {
		return a.fail(1, "runner watch: watching %s: %v (raise fs.inotify.max_user_watches)", root, err)
	}
	if stdin != nil {
		go func() {
			_, _ = io.Copy(io.Discard, stdin)
			ino.Close()
		}()
	}
	w := &watcher{a: a, root: root, out: bufio.NewWriter(a.stdout), announced: map[string]bool{}}
	w.out.WriteString(runner.WatchReady + "\n")
	if err := w.out.Flush(); err != nil {
		return a.fail(1, "runner watch: %v", err)
	}
	buf := make([]byte, 64<<10)
	for {
		n, err := ino.Read(buf)
		if errors.Is(err, os.ErrClosed) {
			return 0 // stdin ended
		}
		if err != nil {
			return a.fail(1, "runner watch: reading inotify: %v", err)
		}
		if gone := w.events(buf[:n]); gone {
			return a.fail(1, "runner watch: state dir %s removed", root)
		}
		if err := w.out.Flush(); err != nil {
			return a.fail(1, "runner watch: %v", err)
		}
	}
}

// watcher is the state of one "runner watch".
type watcher struct {
	a    *agent
	root string
	out  *bufio.Writer
	// announced holds the containers announced and not forgotten since:
	// each exit is announced once, however many events its directory gets.
	announced map[string]bool
}

// events handles a read's inotify events; gone reports that the state
// directory itself went away.
func (w *watcher) events(b []byte) (gone bool) {
	for len(b) >= unix.SizeofInotifyEvent {
		ev := (*unix.InotifyEvent)(unsafe.Pointer(&b[0]))
		end := unix.SizeofInotifyEvent + int(ev.Len)
		if end > len(b) {
			return false
		}
		name := string(trimNUL(b[unix.SizeofInotifyEvent:end]))
		b = b[end:]
		switch {
		case ev.Mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF|unix.IN_IGNORED) != 0:
			return true
		case ev.Mask&unix.IN_Q_OVERFLOW != 0:
			// Events were dropped: look at every container once.
			w.rescan()
		case ev.Mask&(unix.IN_MOVED_FROM|unix.IN_DELETE) != 0:
			delete(w.announced, name)
		case ev.Mask&unix.IN_ACCESS != 0 && ev.Mask&unix.IN_ISDIR != 0 && name != "":
			w.check(name)
		}
	}
	return false
}

// check announces name if it is a container whose exit is recorded and
// that was not announced yet.
func (w *watcher) check(name string) {
	if w.announced[name] || !safeID(name) {
		return
	}
	st := w.a.status(filepath.Join(w.root, name), name)
	if st.State != runner.StateExited || st.Lost != "" {
		return // not this container's end (someone read its directory)
	}
	w.announced[name] = true
	fmt.Fprintf(w.out, "%s %s ", runner.WatchExited, name)
	_ = runner.FormatList(w.out, []runner.Status{st}) // a write error shows at the flush
}

func (w *watcher) rescan() {
	ents, err := os.ReadDir(w.root)
	if err != nil {
		return // the probe's list is the safety net
	}
	for _, e := range ents {
		if e.IsDir() {
			w.check(e.Name())
		}
	}
}

func trimNUL(b []byte) []byte {
	for len(b) > 0 && b[len(b)-1] == 0 {
		b = b[:len(b)-1]
	}
	return b
}
