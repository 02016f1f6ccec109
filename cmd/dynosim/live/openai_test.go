package live

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/core/sim"
	"github.com/dynosim/dynosim-web/core/workload"
)

// FuzzCompletionRequest: any body either fails to decode or yields a
// prompt and a max_tokens, or an error naming the field, never a panic.
func FuzzCompletionRequest(f *testing.F) {
	for _, s := range []string{
		`{"prompt":"hi","max_tokens":3}`, `{"prompt":["a"]}`, `{"prompt":[1,2,3]}`, `{"prompt":[[1,2]]}`,
		`{"prompt":[-1]}`, `{"prompt":[4294967296]}`, `{"prompt":null}`, `{"prompt":{}}`,
		`{"messages":[{"role":"user","content":"x"}]}`, `{"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}]}`,
		`{"messages":[{"content":7}]}`, `{"max_tokens":-5,"prompt":"x"}`, `{"max_completion_tokens":0}`,
		`{"prompt":"x","max_tokens":4611686018427387904}`, `{"prompt":"x","max_tokens":10000000000}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var q completionRequest
		if json.Unmarshal(body, &q) != nil {
			return
		}
		// The one-pass token-id parser agrees with encoding/json.
		var ids []uint32
		if json.Unmarshal(q.Prompt, &ids) == nil && len(q.Prompt) > 0 && q.Prompt[0] == '[' {
			got, err := tokenIDs(q.Prompt)
			if err != nil && !bytes.ContainsAny(q.Prompt, ".eE") && len(ids) > 0 {
				t.Fatalf("%s: %v, encoding/json reads %v", q.Prompt, err, ids)
			}
			if err == nil && !slices.Equal(got, ids) {
				t.Fatalf("%s: %v, encoding/json reads %v", q.Prompt, got, ids)
			}
		}
		for _, chat := range []bool{false, true} {
			p, err := q.prompt(chat)
			if err == nil && !chat && len(q.Prompt) == 0 && len(p) != 0 {
				t.Fatalf("no prompt gave %d tokens", len(p))
			}
			if n, err := q.maxTokens(chat); err == nil && (n < 1 || n > workload.MaxRequestTokens) {
				t.Fatalf("max_tokens %d accepted", n)
			}
		}
	})
}

// FuzzRequestDecoder feeds any body to the server's own request decoder,
// for completions and for chat (parse: the body read under its limits,
// the prompt, max_tokens, n and the KV-pool rule) and to /tokenize: it
// accepts a request the engine can take, or answers an OpenAI error with a
// 4xx, never a panic; and every body's bytes are given back to the
// in-flight budget (issue 29 items 1, 3, 8).
func FuzzRequestDecoder(f *testing.F) {
	for _, s := range []string{
		`{"prompt":"hi","max_tokens":3}`, `{"prompt":[1,2,3],"max_tokens":1}`, `{"prompt":[[1,2]]}`, `{"prompt":["a"]}`,
		`{"messages":[{"role":"user","content":"x"}]}`, `{"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],"max_completion_tokens":2}`,
		`{"prompt":"x","max_tokens":4611686018427387904}`, `{"prompt":"x","max_tokens":400}`, `{"prompt":"x","n":2}`,
		`{"prompt":"x","model":"nope"}`, `{"prompt":`, `{"prompt":"x"} trailing`, `{"prompt":[` + strings.Repeat("7,", 600) + `7]}`,
	} {
		f.Add([]byte(s))
	}
	// A pool of 8 blocks of 64 tokens: requests past it are refused.
	s, err := New(Options{Inputs: sim.Inputs{Config: []byte(twoWorkers), ConfigName: "live.yaml", Sets: []string{
		"engine.workers.aggregated.kv_cache.capacity.type=fixed", "engine.workers.aggregated.kv_cache.capacity.blocks=8"}}})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { s.Close() })
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, chat := range []bool{false, true} {
			w := httptest.NewRecorder()
			r := httptest.NewRequest("POST", "/v1/completions", bytes.NewReader(body))
			_, prompt, n, held, ok := s.parse(w, r, chat)
			if ok {
				if len(prompt) == 0 || n < 1 || n > workload.MaxRequestTokens || w.Body.Len() != 0 {
					t.Fatalf("chat %v: accepted %d prompt tokens and max_tokens %d, answered %q", chat, len(prompt), n, w.Body)
				}
				if _, err := s.d.live.Fits(len(prompt), n); err != nil {
					t.Fatalf("chat %v: accepted a request that cannot fit: %v", chat, err)
				}
				held.free()
			} else {
				checkError(t, w)
			}
		}
		w := httptest.NewRecorder()
		s.tokenize(w, httptest.NewRequest("POST", "/tokenize", bytes.NewReader(body)))
		if w.Code != 200 {
			checkError(t, w)
		} else if !json.Valid(w.Body.Bytes()) {
			t.Fatalf("/tokenize answered invalid JSON %.200q", w.Body)
		}
		if u := s.budget.used.Load(); u != 0 {
			t.Fatalf("%d bytes left held", u)
		}
	})
}

// checkError wants an OpenAI error with a 4xx status.
func checkError(t *testing.T, w *httptest.ResponseRecorder) {
	t.Helper()
	var e apiError
	if w.Code < 400 || w.Code > 499 || json.Unmarshal(w.Body.Bytes(), &e) != nil || e.Error.Message == "" || e.Error.Code != w.Code {
		t.Fatalf("refused with %d %q, want a 4xx OpenAI error", w.Code, w.Body)
	}
}
