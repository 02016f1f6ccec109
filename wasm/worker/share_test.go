//go:build !(js && wasm)

package main

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"regexp"
	"testing"
)

// Issue 32 item 9: a stored run is shared as the rendered page,
// PAGE_URL?run={id}; its inputs are kept beside the report for the page's
// editor; GET /v1/runs/{id} stays JSON for API clients and sends a browser's
// navigation to the page.
func TestItem9WorkerShareURL(t *testing.T) {
	body, ct := multipartBody(t, field{"config", "my.yaml", testConfig}, field{"trace", "t.jsonl", traceSlice(t, 20)},
		field{"set", "", "router.policy=round_robin"})
	raw := body.Bytes()
	for _, tc := range []struct {
		name, page string
		want       string // the share URL's pattern, "" for none
	}{
		{"page", "https://sim.example.org", `^https://sim\.example\.org/\?run=[0-9a-f]{32}$`},
		{"page with a query", "https://sim.example.org/app/?service=https%3A%2F%2Fw.example#x", `^https://sim\.example\.org/app/\?run=[0-9a-f]{32}&service=https%3A%2F%2Fw\.example$`},
		{"no page", "", ""},
		{"not http(s)", "javascript:alert(1)", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := NewHandler(newMemStore(), Options{PageURL: tc.page})
			for _, round := range []string{"miss", "hit"} {
				rec := do(t, h, "POST", "/v1/predict", bytes.NewBuffer(raw), ct)
				if rec.Code != 200 || rec.Header().Get("X-Dynosim-Cache") != round {
					t.Fatalf("%s: status %d, cache %q", round, rec.Code, rec.Header().Get("X-Dynosim-Cache"))
				}
				share, id := rec.Header().Get("X-Dynosim-Share-URL"), rec.Header().Get("X-Dynosim-Run-Id")
				if (tc.want == "") != (share == "") || (share != "" && !regexp.MustCompile(tc.want).MatchString(share)) {
					t.Fatalf("%s: share URL %q, want %q", round, share, tc.want)
				}
				if share != "" && !bytes.Contains([]byte(share), []byte("run="+id)) {
					t.Errorf("share URL %q does not name run %s", share, id)
				}
				loc := rec.Header().Get("Location")
				for _, accept := range []string{"", "*/*", "application/json", "text/html,application/xhtml+xml,*/*;q=0.8"} {
					req := httptest.NewRequest("GET", loc, nil)
					if accept != "" {
						req.Header.Set("Accept", accept)
					}
					got := httptest.NewRecorder()
					h.ServeHTTP(got, req)
					if accept[:min(len(accept), 9)] == "text/html" && share != "" {
						if got.Code != 303 || got.Header().Get("Location") != share {
							t.Errorf("Accept %q: %d to %q, want 303 to %q", accept, got.Code, got.Header().Get("Location"), share)
						}
						continue
					}
					if got.Code != 200 || got.Body.String() != rec.Body.String() {
						t.Errorf("Accept %q: %d, want the report", accept, got.Code)
					}
				}
				in := do(t, h, "GET", loc+"/inputs", nil, "")
				var si storedInputs
				if err := json.Unmarshal(in.Body.Bytes(), &si); in.Code != 200 || err != nil {
					t.Fatalf("inputs: %d %v", in.Code, err)
				}
				if si.Config != testConfig || si.ConfigName != "my.yaml" || si.TraceName != "t.jsonl" || len(si.Sets) != 1 {
					t.Errorf("inputs %+v", si)
				}
			}
		})
	}
	h := NewHandler(newMemStore(), Options{PageURL: "https://sim.example.org"})
	for _, p := range []string{"/v1/runs/0123456789abcdef0123456789abcdef/inputs", "/v1/runs/nope/inputs"} {
		if rec := do(t, h, "GET", p, nil, ""); rec.Code != 404 {
			t.Errorf("%s: %d, want 404", p, rec.Code)
		}
	}
}
