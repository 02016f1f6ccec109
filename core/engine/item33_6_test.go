package engine

import (
	"testing"

	"github.com/dynosim/dynosim-web/timing"
)

// mixModel prices prefill 10 ms, decode 1 ms, and a mixed forward 7 ms, so
// a pass's duration says which way it was priced.
type mixModel struct{ timing.Fixed }

func (mixModel) MixedMs(batch, isl, prefix, decBatch, activeKV, ctx, totalKV int) float64 { return 7 }

// loopStep is what one pass did, as the tests compare it.
type loopStep struct {
	ms                int   // duration
	decodes, prefills int   // FPM.DecodeRequests, FPM.PrefillRequests
	tokens            []int // ids (as ints) that got a token, in order
}

func (s loopStep) eq(o loopStep) bool {
	if s.ms != o.ms || s.decodes != o.decodes || s.prefills != o.prefills || len(s.tokens) != len(o.tokens) {
		return false
	}
	for i := range s.tokens {
		if s.tokens[i] != o.tokens[i] {
			return false
		}
	}
	return true
}

func seen(p Pass) loopStep {
	s := loopStep{ms: int((p.End - p.Start).Ms()), decodes: p.FPM.DecodeRequests, prefills: p.FPM.PrefillRequests}
	for _, g := range p.Signals {
		if g.HasToken {
			s.tokens = append(s.tokens, int(g.ID))
		}
	}
	return s
}

// TestItem33_6SGLangEventLoop drives one rank through the same arrivals
// under each pass shape, chunk budget 64: request 1 (40-token prompt, 4
// tokens) starts alone, request 2 (64-token prompt, 3 tokens) arrives after
// request 1's second pass.
//
// PrefillFirst (engine.semantics real): a pass with a new prefill batch has
// no decode tokens and lasts the prefill alone; the prompt's first token
// comes out of that pass (TTFT = the prefill pass's end); the running
// request resumes decoding at the next pass. MixedChunk: request 2's
// prompt shares a forward with request 1's decode (priced by MixedMs), its
// chunk budget less the one running request, so the 64-token prompt takes
// two chunks (63 + 1). AdditivePass (mocker.md §3.4) is the reference's:
// every pass is the prefill plus a decode step of every running request,
// the completed prompt included.
func TestItem33_6SGLangEventLoop(t *testing.T) {
	type tc struct {
		name string
		loop SGLangLoop
		want []loopStep
	}
	for _, c := range []tc{
		{"real_prefill_first", PrefillFirst, []loopStep{
			{ms: 10, prefills: 1, tokens: []int{1}}, // 1's prefill samples its first token
			{ms: 1, decodes: 1, tokens: []int{1}},
			{ms: 10, prefills: 1, tokens: []int{2}}, // 2's prefill runs alone: 1 waits
			{ms: 1, decodes: 2, tokens: []int{1, 2}},
			{ms: 1, decodes: 2, tokens: []int{1, 2}},
		}},
		{"real_mixed_chunk", MixedChunk, []loopStep{
			{ms: 10, prefills: 1, tokens: []int{1}}, // nothing runs: nothing to mix
			{ms: 1, decodes: 1, tokens: []int{1}},
			{ms: 7, decodes: 1, prefills: 1, tokens: []int{1}},    // 2's first chunk (63) and 1's decode
			{ms: 7, decodes: 1, prefills: 1, tokens: []int{1, 2}}, // 2's last prompt token samples its first
			{ms: 1, decodes: 1, tokens: []int{2}},
		}},
		{"mocker_additive", AdditivePass, []loopStep{
			{ms: 11, decodes: 1, prefills: 1, tokens: []int{1}},
			{ms: 1, decodes: 1, tokens: []int{1}},
			{ms: 11, decodes: 2, prefills: 1, tokens: []int{1, 2}},
			{ms: 1, decodes: 2, tokens: []int{1, 2}},
			{ms: 1, decodes: 1, tokens: []int{2}},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := sgcfg(1, 4096, 64)
			cfg.Model = mixModel{timing.Fixed{Prefill: 10, Decode: 1}}
			cfg.SGLang.Loop = c.loop
			core := mustSG(t, cfg)
			d := &rankDriver{t: t, c: core}
			sgSubmit(t, core, 1, seqTokens(40, 1), 4)
			var got []loopStep
			for i := 0; i < len(c.want); i++ {
				if i == 2 {
					sgSubmit(t, core, 2, seqTokens(64, 5000), 3)
				}
				got = append(got, seen(d.step()))
			}
			for i := range c.want {
				if !got[i].eq(c.want[i]) {
					t.Errorf("pass %d: got %+v, want %+v", i+1, got[i], c.want[i])
				}
			}
		})
	}
}

// TestItem33_6FirstTokenAtPrefillEnd checks, under PrefillFirst, that each
// request's first token is signalled by the pass that completed its prompt
// (so the replay stamps TTFT at that prefill pass's end), that such a pass
// carries no decode token of a running request, and that a chunked prompt
// starves the decode batch until its last chunk, as SGLang's loop does.
func TestItem33_6FirstTokenAtPrefillEnd(t *testing.T) {
	for _, c := range []struct {
		name   string
		prompt int // request 2's prompt; chunk budget 64
		chunks int // prefill passes it takes
	}{
		{"one_pass", 50, 1},
		{"three_chunks", 150, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := sgcfg(1, 4096, 64)
			cfg.Model = timing.Fixed{Prefill: 10, Decode: 1}
			cfg.SGLang.Loop = PrefillFirst
			cfg.Watch = 2
			core := mustSG(t, cfg)
			d := &rankDriver{t: t, c: core}
			sgSubmit(t, core, 1, seqTokens(20, 1), 50)
			d.step() // 1's prefill
			d.step() // 1 decodes
			sgSubmit(t, core, 2, seqTokens(c.prompt, 9000), 5)
			for i := 1; i <= c.chunks; i++ {
				p := d.step()
				s := seen(p)
				if s.decodes != 0 || s.ms != 10 {
					t.Fatalf("chunk %d: %+v, want a 10 ms prefill pass with no decode", i, s)
				}
				first := len(s.tokens) == 1 && s.tokens[0] == 2
				if first != (i == c.chunks) {
					t.Fatalf("chunk %d of %d: tokens %v", i, c.chunks, s.tokens)
				}
				if first && (p.Signals[0].Cached != 0 || p.End != p.Start+timing.FromMs(10)) {
					t.Fatalf("first token: %+v at %v, want the first signal at the prefill's end", p.Signals[0], p.End)
				}
				// The timeline's view: its chunk, no decode step, a batch of one.
				chunk := 64
				if i == c.chunks {
					chunk = c.prompt - (c.chunks-1)*64
				}
				if w := p.Watched; w == nil || w.PrefillTokens != chunk || w.DecodeTokens != 0 || w.Batch != 1 {
					t.Fatalf("chunk %d: watched %+v, want %d prefill tokens, no decode, batch 1", i, p.Watched, chunk)
				}
			}
			if s := seen(d.step()); s.decodes != 2 || len(s.tokens) != 2 {
				t.Fatalf("after the prefill: %+v, want both decoding", s)
			}
		})
	}
}

// seqTokens is n distinct tokens from base.
func seqTokens(n int, base uint32) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = base + uint32(i)
	}
	return out
}
