package tui

// A filter's search of the containers' rows keeps its answers for the
// cells many rows share (ctrReader.ContainsFold): it must give the rows
// a plain search of every cell's text gives.

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"dispatch-tui/tui/backend"
	"dispatch-tui/tui/table"
)

// oddContainers are mixedContainers with numbers past the usual: large
// and negative priorities, many tries, odd sizes and exit codes.
func oddContainers(rng *rand.Rand, n int) *backend.Rows {
	cs := mixedContainers(rng, n)
	for i := range cs {
		c := &cs[i]
		if rng.IntN(3) != 0 {
			continue
		}
		c.Priority = []int{-7, 0, 9, 12, 42, 1000, 421, math.MaxInt32, math.MinInt32}[rng.IntN(9)]
		c.RuntimeConstraints.VCPUs = []int{4, 24, 42, 64}[rng.IntN(4)]
		c.RuntimeConstraints.RAM = []int64{1000, 1536 << 20, 3 << 40, 42 << 30, 1<<62 + 7}[rng.IntN(5)]
		c.Attempts, c.MaxAttempts = rng.IntN(14), []int{1, 3, 10, 42}[rng.IntN(4)]
		if c.ExitCode != nil {
			code := []int{2, 42, 255, -1, 1 << 30}[rng.IntN(5)]
			c.ExitCode = &code
		}
	}
	return backend.NewRows(cs, nil)
}

// foldFilters are filters a row's cells may hold: digits, letters in
// either case, pieces of sizes, ages, tries, marks and reasons, and
// nothing; then a cell's whole text, and a piece of one, of random rows.
func foldFilters(rng *rand.Rand, rows *backend.Rows) []string {
	fs := []string{"4", "42", "1", "0", "7", "-", "/", "3/3", "1/", "/10", "s", "5m", "59m", "1h", "47h", "2d", "d",
		"MiB", "gib", "1.5", "512", "tib", "exit", "137", "255", "kill", "HELD", "Held", "queued", "Complete",
		"i-00", "t1", "team=T2", "position", "in", "c-0", "job-1", "zzz", "k", "I", "ü"}
	(&ctrSource{rows: rows, now: fixedClock}).Read(func(rd table.Reader) {
		for range 40 {
			i, c := rng.IntN(rd.Len()), rng.IntN(nCtrCols)
			text := string(rd.AppendText(nil, i, c))
			if text == "" {
				continue
			}
			from := rng.IntN(len(text))
			piece := []byte(text[from : from+1+rng.IntN(len(text)-from)])
			for k, x := range piece {
				if 'a' <= x && x <= 'z' && rng.IntN(2) == 0 {
					piece[k] = x - 'a' + 'A'
				}
			}
			fs = append(fs, text, string(piece))
		}
	})
	return fs
}

// The search with kept answers gives every row the plain search's
// answer, one Fold kept over reads whose clocks differ (each read's ages
// are others), as a filter's goroutine keeps it over its chunks of rows.
func TestContainsFoldSameAsPlain(t *testing.T) {
	rng := rand.New(rand.NewPCG(32, 7))
	rows := oddContainers(rng, 1000)
	nows := []time.Time{t0, t0.Add(59 * time.Second), t0.Add(3 * time.Hour), t0.Add(47 * time.Hour),
		t0.Add(30 * 24 * time.Hour), {}, time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC)}
	searched, held := 0, 0
	for _, pat := range foldFilters(rng, rows) {
		kept, plain := table.NewFold(pat), table.NewFold(pat)
		if kept == nil { // not a Fold's filter: a space, or not ASCII
			continue
		}
		for _, now := range nows {
			src := &ctrSource{rows: rows, now: func() time.Time { return now }}
			src.Read(func(rd table.Reader) {
				fr := rd.(table.FoldReader)
				for i := range rd.Len() {
					want := plain.In(rd.Hidden(i))
					var cells []string
					for c := range nCtrCols {
						text := string(rd.AppendText(nil, i, c))
						cells = append(cells, text)
						want = want || plain.In(text)
					}
					// The age as the screen shows it, made from the
					// times (ctrReader.ageOf subtracts nanoseconds).
					if age := rd.Text(i, colAge); cells[colAge] != age {
						t.Fatalf("at %v, row %d: AGE is %q, the screen's %q", now, i, cells[colAge], age)
					}
					if got := fr.ContainsFold(i, kept); got != want {
						t.Fatalf("filter %q at %v, row %d: ContainsFold says %v, its cells say %v\ncells: %q\nhidden: %q",
							pat, now, i, got, want, cells, rd.Hidden(i))
					}
					searched++
					if want {
						held++
					}
				}
			})
		}
	}
	if held == 0 || held == searched {
		t.Fatalf("%d of %d rows searched held their filter: the test tells nothing", held, searched)
	}
	t.Logf("%d of %d rows searched held their filter", held, searched)
}
