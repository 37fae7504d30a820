package api

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"encoding/json"

	"dispatch-tui/engine/view"
)

// daemonPage is a changes page as the daemon writes it (changespage.go):
// items by appendItem, the rest by encoding/json, a newline after.
func daemonPage(t testing.TB, vs []view.Container, removed []string, more bool) []byte {
	t.Helper()
	b := []byte(`{"items":[`)
	for i := range vs {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendItem(b, &vs[i], 0.5*float64(i)); err != nil {
			t.Fatal(err)
		}
	}
	if removed == nil {
		removed = []string{}
	}
	rest, err := json.Marshal(ChangesBody{Items: []ContainerItem{}, Removed: removed, Generation: 41, More: more, Latest: 42, ItemsAvailable: 1000})
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, ']')
	b = append(b, rest[len(`{"items":[]`):]...)
	return append(b, '\n')
}

// decodePage reads page as a console does: its items and the rest.
func decodePage(page []byte) (changesJSON, error) {
	p := &pageBuf{body: append([]byte(nil), page...)}
	var got changesJSON
	body, err := decodeChangesPage(p, nil, func(c *view.Container) { got.Items = append(got.Items, *c) })
	got.ChangesBody = body
	return got, err
}

// checkPage fails t unless page reads as json.Unmarshal reads it into a
// changesJSON (an error where it errs), and reports whether pageScanner
// took it (no encoding/json for the page as a whole).
func checkPage(t *testing.T, page []byte) (scanned bool) {
	t.Helper()
	var want changesJSON
	wantErr := json.Unmarshal(page, &want)
	if len(want.Items) == 0 {
		want.Items = nil // an empty array hands nothing over, as null does
	}
	s := pageScanner{b: page}
	_, scanned = s.page()
	got, err := decodePage(page)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("page\n%s\nread with error %v, json.Unmarshal's %v", page, err, wantErr)
	}
	if err == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("page\n%s\nread as\n%#v\njson.Unmarshal:\n%#v", page, got, want)
	}
	return scanned
}

// TestChangesPageAsUnmarshal: a changes page is read as encoding/json
// reads it, whatever it holds; the daemon's pages, and pages with members
// it does not write, without encoding/json for the page.
func TestChangesPageAsUnmarshal(t *testing.T) {
	vs := sampleViews()
	daemon := [][]byte{
		daemonPage(t, vs, nil, false),
		daemonPage(t, vs[:1], []string{"c-9", "c-10"}, true),
		daemonPage(t, nil, []string{"c-9"}, false),
		daemonPage(t, nil, nil, false),
	}
	for _, page := range daemon {
		if !checkPage(t, page) {
			t.Errorf("the daemon's page was left to encoding/json:\n%s", page)
		}
	}
	item := string(daemonPage(t, vs[:1], nil, false))
	item = item[len(`{"items":[`):strings.Index(item, `],"removed"`)]
	// Pages the daemon does not write, that the scanner reads itself.
	for _, page := range []string{
		`{}`,
		` { "items" : [ ` + item + ` , ` + item + ` ] , "generation" : 7 } ` + "\n\t\r ",
		`{"items":null,"removed":null,"generation":null,"latest":null,"more":null,"items_available":null}`,
		`{"items":[],"removed":[],"generation":0,"latest":18446744073709551615,"more":false,"items_available":-3}`,
		`{"removed":["a\"b","\u00e9\ud83d\ude00","x\/y","\ud800","é"],"generation":3}`,
		`{"unknown":{"a":[1,-2.5e+3,{"b":null}],"c":"\u2028"},"items":[{"state":"Queued","labels":{"a":{"nested":[true]}},"cost":1}],"x":[]}`,
		`{"items":[{"name":"q \"quoted\" \\ \n \u00e9 é \u2028","labels":{"k\u00e9":"v"}}]}`,
		`{"items":[null,{}]}`,
		`{"items":[{"state":"Queued","priority":"x","cost":1}]}`,
		`{"items":[` + item + `,"x"]}`,
	} {
		if !checkPage(t, []byte(page)) {
			t.Errorf("page left to encoding/json:\n%s", page)
		}
	}
	// Pages left to encoding/json whole (a member's value of another
	// type, a name in another case or escaped, a member twice), and pages
	// that are not JSON.
	for _, page := range []string{
		`{"items":[` + item + `],"generation":1.0}`,
		`{"items":[` + item + `],"latest":-1}`,
		`{"items":[` + item + `],"items_available":1e3}`,
		`{"items":[` + item + `],"more":"yes"}`,
		`{"items":[` + item + `],"removed":"c-1"}`,
		`{"items":[` + item + `],"removed":[1]}`,
		`{"items":{}}`,
		`{"generation":18446744073709551616}`,
		`{"Items":[` + item + `],"GENERATION":5}`,
		`{"items":[` + item + `],"items":[]}`,
		`{"generation":1,"generation":2}`,
		`{"gen\u0065ration":9}`,
		`{"ıtems":[]}`,
		`{"items":[` + item + `]} x`,
		`{"items":[` + item + `],}`,
		`{"items":[` + item + `,]}`,
		`{"items":[` + item + `]`,
		`{"items":[{"name":"a` + "\x01" + `"}]}`,
		`{"items":[{"cost":01}]}`,
		`{"items":[{"cost":1.}]}`,
		`{"items":[{"cost":-}]}`,
		`{"items":[{"name":"\x"}]}`,
		`{"items":[{"name":"\u12"}]}`,
		`{"items":[tru]}`,
		`[]`, `null`, ``, `"items"`,
		`{"x":` + strings.Repeat("[", 9999) + strings.Repeat("]", 9999) + `}`,
		`{"x":` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}`,
		`{"items":[` + strings.Repeat("[", 9998) + strings.Repeat("]", 9998) + `]}`,
	} {
		checkPage(t, []byte(page))
	}
}

// TestChangesPageWithCostNotANumber: an item whose view the fast reader
// takes but whose cost is not JSON is an error, as encoding/json's.
func TestChangesPageWithCostNotANumber(t *testing.T) {
	page := string(daemonPage(t, sampleViews()[:1], nil, false))
	for _, bad := range []string{`1-2`, `1e`, `--1`, `1.2.3`, `+1`} {
		p := strings.Replace(page, `"cost":0}`, `"cost":`+bad+`}`, 1)
		if p == page {
			t.Fatal("the page has no cost of 0 to replace")
		}
		if _, err := decodePage([]byte(p)); err == nil {
			t.Errorf("a cost of %s was read without an error", bad)
		}
	}
}

// TestMalformedChangesPage: a page that is not JSON is an error naming
// the request, and hands no item over, even after items that were whole.
func TestMalformedChangesPage(t *testing.T) {
	good := daemonPage(t, sampleViews(), nil, false)
	for _, body := range [][]byte{
		good[:len(good)-10],                                       // cut short
		append(good[:len(good)-1:len(good)-1], `,}`...),           // a trailing comma
		[]byte(strings.Replace(string(good), `"c-3"`, `"c-3`, 1)), // the last item's id unclosed
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write(body)
		}))
		handed := 0
		_, err := NewClient(srv.URL, "").ContainerChangesEach(context.Background(), 5, 100, 0, func(*view.Container) { handed++ })
		srv.Close()
		if err == nil || !strings.Contains(err.Error(), "GET /v1/containers?changed_since: decode response") {
			t.Errorf("a malformed page read with error %v, want one naming the request", err)
		}
		if handed != 0 {
			t.Errorf("a malformed page handed %d items over, want none", handed)
		}
	}
}

// FuzzChangesPage: whatever the body, a page reads as json.Unmarshal
// reads it.
func FuzzChangesPage(f *testing.F) {
	vs := sampleViews()
	f.Add(daemonPage(f, vs, []string{"c-9"}, true))
	f.Add(daemonPage(f, vs[:1], nil, false))
	f.Add([]byte(`{"items":[{"name":"\u00e9\"","labels":{"a":"b"},"cost":1e-7}],"removed":["\ud83d\ude00"],"x":[{}]}`))
	f.Add([]byte(`{"Items":null,"more":true,"latest":"1"}`))
	f.Fuzz(func(t *testing.T, page []byte) {
		if len(page) > 1<<16 {
			return
		}
		checkPage(t, page)
	})
}

// BenchmarkChangesPageRead is an attached console's read of a changes
// page of 2,500 items (its page size) as the daemon writes them, over
// HTTP from a server that writes the page made beforehand: the request,
// the body read, every item handed over. cpu-ns/item is the process's
// CPU (the server's writing of the bytes included) a page's item.
func BenchmarkChangesPageRead(b *testing.B) {
	vs := make([]view.Container, 2500)
	base := sampleViews()[0]
	for i := range vs {
		vs[i] = base
		vs[i].ID, vs[i].Name, vs[i].Seq = fmt.Sprintf("c-%016x", i*7919), fmt.Sprint("q-", i), uint64(i+1)
		vs[i].Labels = map[string]string{"pct": fmt.Sprint(i % 100), "team": "t1"}
	}
	page := daemonPage(b, vs, nil, false)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(page)
	}))
	defer srv.Close()
	c := NewClient(srv.URL, "")
	ctx := context.Background()
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		n := 0
		if _, err := c.ContainerChangesEach(ctx, 1, len(vs), 0, func(*view.Container) { n++ }); err != nil || n != len(vs) {
			b.Fatalf("read %d items, %v", n, err)
		}
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N*len(vs)), "cpu-ns/item")
}
