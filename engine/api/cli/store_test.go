package cli

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"dispatch-tui/engine/view"
)

// While the daemon's store cannot write, ls says so on stderr, with the
// time and the cause escaped, and leaves stdout to the listing (-o json
// still parses); while it can, stderr stays empty.
func TestListWarnsWhileTheStoreCannotWrite(t *testing.T) {
	since := time.Date(2026, 11, 25, 8, 0, 7, 0, time.UTC)
	var mu sync.Mutex
	var sum view.Summary
	lists := instancesHandler(sshhostsInstances)
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		if r.URL.Path != "/v1/summary" {
			lists(w, r, body)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		writeJSONTo(w, sum)
	})
	setSummary := func(s view.Summary) {
		mu.Lock()
		defer mu.Unlock()
		sum = s
	}
	for _, args := range [][]string{{"ls", "instances"}, {"ls", "containers", "-o", "json"}, {"ls", "events", "-o", "name"}} {
		setSummary(view.Summary{})
		code, out, errOut := runCLI(t, f.srv.URL, nil, "", args...)
		if code != 0 || errOut != "" || out == "" {
			t.Fatalf("%v with the store writing: exit %d, stderr %q", args, code, errOut)
		}
		setSummary(view.Summary{StoreUnavailableSince: since, StoreError: "no space left on device\x1b[31m"})
		code, out2, errOut := runCLI(t, f.srv.URL, nil, "", args...)
		want := "warning: store unavailable since " + since.Local().Format(time.TimeOnly) + `: no space left on device\x1b[31m (`
		if code != 0 || !strings.HasPrefix(errOut, want) || strings.Count(errOut, "\n") != 1 || strings.ContainsRune(errOut, 0x1b) {
			t.Fatalf("%v with the store failing: exit %d, stderr %q, want it to start %q", args, code, errOut, want)
		}
		if out2 != out {
			t.Fatalf("%v: stdout changed with the warning:\n%s\nwas\n%s", args, out2, out)
		}
	}
}

// ls types names the store the queue is kept in, in its notes (not with
// --no-headers, not in -o json, which has /v1/summary's "store").
func TestListTypesNamesTheStore(t *testing.T) {
	var mu sync.Mutex
	kind := ""
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		mu.Lock()
		defer mu.Unlock()
		switch r.URL.Path {
		case "/v1/summary":
			writeJSONTo(w, view.Summary{Store: kind})
		default:
			writeJSONTo(w, map[string]any{"items": []view.TypeSummary{{Name: "small", VCPUs: 2, RAM: 4 << 30, Price: 0.1}}})
		}
	})
	for _, tc := range []struct{ kind, want string }{{"postgres", "store: PostgreSQL\n"}, {"bolt", "store: embedded (state_dir)\n"}} {
		mu.Lock()
		kind = tc.kind
		mu.Unlock()
		code, out, errOut := runCLI(t, f.srv.URL, nil, "", "ls", "types")
		if code != 0 || !strings.HasSuffix(out, tc.want) || errOut != "" {
			t.Fatalf("ls types on %s: exit %d, stdout %q, stderr %q; want it to end %q", tc.kind, code, out, errOut, tc.want)
		}
		for _, args := range [][]string{{"ls", "types", "--no-headers"}, {"ls", "types", "-o", "json"}} {
			if _, out, _ := runCLI(t, f.srv.URL, nil, "", args...); strings.Contains(out, "store:") {
				t.Fatalf("%v: %q names the store", args, out)
			}
		}
	}
}
