//go:build !(js && wasm)

package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// failingStore reads like an empty store and refuses every write.
type failingStore struct{}

func (failingStore) Get(string) ([]byte, bool, error) { return nil, false, nil }
func (failingStore) Put(string, []byte) error         { return errors.New("KV put failed: value too large") }

// Issue 29 item 11: the Worker hands out a run URL (Location, and the run
// id) only for a stored run. A report over the store's limit (Workers KV
// takes 25 MiB per value) or a failed write is still answered, with the
// reason in X-Dynosim-Cache and no URL; before, the URL came anyway and
// GET on it answered 404.
func TestItem11WorkerNoRunURLUnlessStored(t *testing.T) {
	body, ct := multipartBody(t, field{"config", "config.yaml", testConfig}, field{"trace", "t.jsonl", traceSlice(t, 20)})
	raw := body.Bytes()
	for _, tc := range []struct {
		name   string
		h      *Handler
		cache  string // prefix of X-Dynosim-Cache
		stored bool
	}{
		{"stored", NewHandler(newMemStore(), Options{}), "miss", true},
		{"over the store's limit", NewHandler(newMemStore(), Options{MaxStoredBytes: 1000}), "miss; not stored: the report's", false},
		{"write failed", NewHandler(failingStore{}, Options{}), "miss; not stored: KV put failed", false},
		{"no store", NewHandler(nil, Options{}), "miss; not stored", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := do(t, tc.h, "POST", "/v1/predict", bytes.NewBuffer(raw), ct)
			if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"summary"`) {
				t.Fatalf("status %d: %.200s", rec.Code, rec.Body)
			}
			cache, loc, id := rec.Header().Get("X-Dynosim-Cache"), rec.Header().Get("Location"), rec.Header().Get("X-Dynosim-Run-Id")
			if !strings.HasPrefix(cache, tc.cache) || (cache == "miss") != tc.stored {
				t.Errorf("X-Dynosim-Cache %q, want %q…", cache, tc.cache)
			}
			if (loc != "") != tc.stored || (id != "") != tc.stored {
				t.Fatalf("Location %q, run id %q: want them exactly when the run is stored (%v)", loc, id, tc.stored)
			}
			if !tc.stored {
				return
			}
			// What was handed out is served, the same bytes.
			if got := do(t, tc.h, "GET", loc, nil, ""); got.Code != 200 || got.Body.String() != rec.Body.String() {
				t.Errorf("GET %s: %d", loc, got.Code)
			}
		})
	}
	// The over-limit run really was not stored: resubmitting runs it again.
	h := NewHandler(newMemStore(), Options{MaxStoredBytes: 1000})
	do(t, h, "POST", "/v1/predict", bytes.NewBuffer(raw), ct)
	if rec := do(t, h, "POST", "/v1/predict", bytes.NewBuffer(raw), ct); strings.HasPrefix(rec.Header().Get("X-Dynosim-Cache"), "hit") {
		t.Error("an over-limit report was stored")
	}
}
