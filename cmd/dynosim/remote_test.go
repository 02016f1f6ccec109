package main

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/dynosim/dynosim-web/core/recommend"
	"github.com/dynosim/dynosim-web/core/sim"
)

// TestRemoteRetriesTransportFaults: a connection the Worker side drops
// before answering costs one more post, not a failed candidate; an HTTP
// answer (the Worker's verdict) is never posted again.
func TestRemoteRetriesTransportFaults(t *testing.T) {
	for _, tc := range []struct {
		name      string
		drops     int32 // connections dropped before an answer
		status    int
		wantPosts int32
		wantErr   bool
	}{
		{"one dropped connection", 1, http.StatusOK, 2, false},
		{"every attempt dropped", remoteAttempts, http.StatusOK, remoteAttempts, true},
		{"a refusal is final", 0, http.StatusUnprocessableEntity, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var posts atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				if n := posts.Add(1); n <= tc.drops {
					conn, _, err := w.(http.Hijacker).Hijack()
					if err == nil {
						conn.Close()
					}
					return
				}
				if tc.status != http.StatusOK {
					w.Header().Set("X-Dynosim-Reason", recommend.ReasonRuntime)
					w.WriteHeader(tc.status)
					w.Write([]byte(`{"error":"no"}`))
					return
				}
				w.Write([]byte(`{}`))
			}))
			defer srv.Close()
			r, err := newRemote(srv.URL, "c.yaml", []byte("traffic: {source: {type: synthetic}}\n"), sim.Inputs{}, 1)
			if err != nil {
				t.Fatal(err)
			}
			rep, _, err := r.Predict(nil)
			if got := posts.Load(); got != tc.wantPosts {
				t.Errorf("posts = %d, want %d", got, tc.wantPosts)
			}
			if (err != nil) != tc.wantErr || (err == nil) != (rep != nil) {
				t.Errorf("Predict: report %v, err %v; want error %v", rep != nil, err, tc.wantErr)
			}
		})
	}
}
