package router

import (
	"testing"

	"github.com/dynosim/dynosim-web/timing"
)

// The aic prefill load model: the oldest active prefill of a worker decays
// over its predicted time; the next one starts to decay when it completes;
// without the model a prefill counts whole until its first token.
func TestAICDecaysTheOldestPrefill(t *testing.T) {
	ms := timing.FromMs
	for _, aic := range []bool{false, true} {
		cfg := KVConfig{Cost: DefaultCostConfig(), BlockSize: 4, Seed: 1, UseEvents: true}
		if aic {
			cfg.PrefillMs = func(isl, cached int) float64 { return float64(isl) } // 1 ms per token
		}
		r, err := NewKV(cfg)
		if err != nil {
			t.Fatal(err)
		}
		v := view{1}
		prompt := func(n int, base uint32) []uint32 {
			p := make([]uint32, n)
			for i := range p {
				p[i] = base + uint32(i)
			}
			return p
		}
		r.Place(&Request{ID: 1, Now: 0, Prompt: prompt(40, 1000)}, v)
		r.Place(&Request{ID: 2, Now: 0, Prompt: prompt(20, 2000)}, v)
		ld := r.rank(0, 0)
		want := func(at timing.Time, whole, decayed int) {
			t.Helper()
			w := whole
			if aic {
				w = decayed
			}
			if got := r.activePrefill(ld, at); got != w {
				t.Errorf("aic %v at %v: active prefill %d, want %d", aic, at, got, w)
			}
		}
		want(0, 60, 60)
		want(ms(10), 60, 50)  // a quarter of request 1's 40 ms
		want(ms(40), 60, 20)  // request 1 fully decayed; request 2 waits
		want(ms(400), 60, 20) // no further than its whole prefill
		r.PrefillDone(1, ms(45))
		want(ms(45), 20, 20)
		want(ms(55), 20, 10) // request 2 decays from request 1's first token
		r.Finished(2, ms(70))
		want(ms(70), 0, 0)
	}
}
