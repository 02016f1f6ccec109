package engine

import (
	"fmt"
	"testing"

	"github.com/dynosim/dynosim-web/timing"
)

// Issue 29 item 8: live mode served requests a prediction rejects as too
// large for the KV pool. Config.Fits is the one rule both use; here it is
// held to what each core does with the request alone, over every prompt
// and output length around its pool's edge, with and without prefix
// caching, max_model_len and speculative decoding.
func TestFitsAgreesWithTheEngine(t *testing.T) {
	type setup struct {
		name string
		cfg  Config
	}
	var setups []setup
	for _, blocks := range []int{3, 4} {
		for _, caching := range []bool{false, true} {
			v := cfg4(blocks, 8, 4, caching)
			setups = append(setups, setup{fmt.Sprintf("vllm %d blocks caching %v", blocks, caching), v})
			m := v
			m.MaxModelLen = 11
			setups = append(setups, setup{fmt.Sprintf("vllm %d blocks max_model_len 11 caching %v", blocks, caching), m})
			setups = append(setups, setup{fmt.Sprintf("vllm %d blocks mtp caching %v", blocks, caching), mtp(v, 1, 1)})
			setups = append(setups, setup{fmt.Sprintf("trtllm %d blocks caching %v", blocks, caching), trt(blocks, 8, 4, caching)})
			setups = append(setups, setup{fmt.Sprintf("trtllm %d blocks mtp caching %v", blocks, caching), mtp(trt(blocks, 8, 4, caching), 1, 1)})
		}
		for _, page := range []int{1, 2, 4} {
			for _, chunk := range []int{4, 8} {
				s := sgcfg(page, blocks*4/page, chunk)
				name := fmt.Sprintf("sglang page %d %d pages chunk %d", page, blocks*4/page, chunk)
				setups = append(setups, setup{name, s})
				nc := s
				nc.PrefixCaching = false
				setups = append(setups, setup{name + " no caching", nc})
				setups = append(setups, setup{name + " mtp", mtp(s, 1, 1)})
			}
		}
		// (TensorRT-LLM serves aggregated only: config refuses it
		// disaggregated.)
		for _, base := range []Config{cfg4(blocks, 8, 4, true), sgcfg(4, blocks, 8), sgcfg(1, blocks*4, 8)} {
			p := base
			p.Prefill = &Handoff{KVBytesPerToken: 1e6}
			setups = append(setups, setup{fmt.Sprintf("%v prefill worker %d×%d", base.Policy, base.NumBlocks, base.BlockSize), p})
			d := base
			d.Decode = true
			setups = append(setups, setup{fmt.Sprintf("%v decode worker %d×%d", base.Policy, base.NumBlocks, base.BlockSize), d})
		}
	}
	for _, s := range setups {
		pool := s.cfg.NumBlocks * s.cfg.BlockSize
		for prompt := 1; prompt <= pool+2; prompt++ {
			for out := 1; out <= pool+2; out++ {
				c, err := NewRank(s.cfg)
				if err != nil {
					t.Fatal(err)
				}
				want := s.cfg.Fits(prompt, out)
				if got := alone(t, c, prompt, out, false); got != want {
					t.Errorf("%s: prompt %d, output %d: the engine says %v, Fits %v", s.name, prompt, out, got, want)
				}
				if !s.cfg.Decode {
					continue
				}
				// A decode worker on the bootstrap path: its reservation
				// of the prompt, then the decode.
				if c, err = NewRank(s.cfg); err != nil {
					t.Fatal(err)
				}
				if got, want := alone(t, c, prompt, out, true), s.cfg.FitsReserved(prompt, out); got != want {
					t.Errorf("%s, reserved: prompt %d, output %d: the engine says %v, Fits %v", s.name, prompt, out, got, want)
				}
			}
		}
	}
}

// alone runs one request on an empty rank c (submitted, or reserved and
// activated as a decode worker's) and returns why it was rejected.
func alone(t *testing.T, c Rank, prompt, out int, reserve bool) Reason {
	t.Helper()
	r := Request{ID: 1, Prompt: span(0, uint32(prompt)), MaxOutput: out}
	if c.(interface{ Config() Config }).Config().Prefill != nil {
		r.MaxOutput = min(1, out) // a prefill worker's copy (core/replay's submitPrefill)
	}
	if !reserve {
		if err := c.Submit(r); err != nil {
			t.Fatal(err)
		}
	} else {
		why, err := c.Reserve(r)
		if err != nil {
			t.Fatal(err)
		}
		if why != NotRejected {
			return why
		}
	}
	got := NotRejected
	var now timing.Time
	for i := 0; !c.Empty(); i++ {
		if i == 10*(prompt+out+4) {
			t.Fatalf("prompt %d, output %d: not done after %d passes", prompt, out, i)
		}
		p := c.Step(now)
		now = max(p.End, now+timing.FromMs(1))
		for _, id := range p.Reserved {
			if !c.Activate(id.ID) {
				t.Fatalf("activate %d", id.ID)
			}
		}
		for _, sig := range p.Signals {
			if sig.Rejected {
				got = sig.Reason
			}
		}
	}
	return got
}
