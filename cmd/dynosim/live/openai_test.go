package live

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"

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
