package engine

import (
	"reflect"
	"slices"
	"testing"

	"github.com/dynosim/dynosim-web/timing"
)

// TestItem34_1SteadyPass: a core that takes the steady decode path
// (steady.go) returns, pass for pass, the pass the general path returns
// (signals, FPM, metrics, counters, KV events, end time), through
// admissions, block boundaries, preemptions and completions, and the
// steady path does run.
func TestItem34_1SteadyPass(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
	}{
		{"caching_events", cfg4(64, 0, 0, true)},
		{"no_caching", cfg4(64, 0, 0, false)},
		{"tight_pool_preempts", cfg4(14, 0, 0, true)},
		{"budget", cfg4(64, 3, 0, true)},
		{"max_seqs", cfg4(64, 0, 2, true)},
		{"trtllm", func() Config { c := cfg4(40, 0, 0, true); c.Policy = TRTLLM; return c }()},
		{"max_model_len", func() Config { c := cfg4(64, 0, 0, true); c.MaxModelLen = 30; return c }()},
		{"block16_roofline_scale", func() Config {
			c := cfg4(32, 0, 0, true)
			c.BlockSize, c.Scale = 16, timing.Scale{Speedup: 1.7}
			return c
		}()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			run := func(off bool) (passes []Pass, steadyPasses int) {
				noSteady = off
				defer func() { noSteady = false }()
				c := mustCore(t, tc.cfg)
				now := timing.Time(0)
				for i := 0; i < 400; i++ {
					if i%37 == 0 && i < 300 { // arrivals between steady stretches
						id := uint64(i/37 + 1)
						submit(t, c, id, span(uint32(id*100), uint32(id*100)+uint32(5+3*id)), 10+int(7*id))
					}
					if c.steady() {
						steadyPasses++
					}
					p := c.Step(now)
					q := clonePass(p)
					q.Events = slices.Clone(p.Events)
					passes = append(passes, q)
					now = max(p.End, now+timing.FromMs(1))
				}
				return passes, steadyPasses
			}
			general, _ := run(true)
			fast, n := run(false)
			if n == 0 {
				t.Fatal("the steady path never ran")
			}
			for i := range general {
				if !reflect.DeepEqual(general[i], fast[i]) {
					t.Fatalf("pass %d differs:\ngeneral %+v\nsteady  %+v", i, general[i], fast[i])
				}
			}
		})
	}
}
