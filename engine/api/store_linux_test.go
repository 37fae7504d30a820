package api

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"dispatch-tui/engine"
	"dispatch-tui/engine/enginetest"
)

// GET /v1/summary says when the store stopped writing and why, while it
// cannot (its disk full), and leaves both out once it writes again; the
// Go client reads them back.
func TestSummaryShowsAStoreThatCannotWrite(t *testing.T) {
	f := enginetest.NewFullStore(t, enginetest.Config(t), engine.Options{})
	srv := httptest.NewServer(NewServer(ServerOptions{Engine: f.Engine, Token: testToken}))
	t.Cleanup(srv.Close) // before the engine closes
	get := func() map[string]any {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/v1/summary", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /v1/summary: %d, %v", resp.StatusCode, err)
		}
		return body
	}
	body := get()
	since, _ := body["store_unavailable_since"].(string)
	if at, err := time.Parse(time.RFC3339Nano, since); err != nil || !at.Equal(f.Engine.StoreHealth().UnavailableSince) {
		t.Fatalf("store_unavailable_since %q (%v), want %s", since, err, f.Engine.StoreHealth().UnavailableSince)
	}
	if got := body["store_error"]; got != "no space left on device" {
		t.Fatalf("store_error %q", got)
	}
	sum, err := NewClient(srv.URL, testToken).Summary(t.Context())
	if err != nil || sum.StoreStatus() == "" || sum.StoreError != "no space left on device" {
		t.Fatalf("client summary: %+v, %v", sum, err)
	}

	f.Free()
	f.Until("the store writes again", 10, func() bool { return f.Engine.StoreHealth().UnavailableSince.IsZero() })
	body = get()
	if _, ok := body["store_unavailable_since"]; ok {
		t.Fatalf("store_unavailable_since still there: %v", body)
	}
	if _, ok := body["store_error"]; ok {
		t.Fatalf("store_error still there: %v", body)
	}
}
