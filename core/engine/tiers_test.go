package engine

import (
	"slices"
	"testing"

	"github.com/dynosim/dynosim-web/kv/tiers"
	"github.com/dynosim/dynosim-web/timing"
)

// tierCore is a vLLM core on the KVBM G1 of 4 blocks of 4 tokens, with a
// G2 of g2 blocks (and G3 of g3) over 1 GB/s links and 1 MB blocks: a lone
// block takes 1 ms on any link.
func tierCore(t *testing.T, g2, g3 int) *Core {
	t.Helper()
	set := tiers.DefaultSettings()
	set.BlockSize, set.BytesPerToken, set.G2Blocks, set.G3Blocks = 4, 2.5e5, g2, g3
	set.G1ToG2, set.G2ToG1, set.G2ToG3, set.G3ToG2 = 1, 1, 1, 1
	tc, err := tiers.Resolve(set)
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(Config{BlockSize: 4, NumBlocks: 4, PrefixCaching: true, ChunkedPrefill: true, G1: KVBMG1,
		Model: timing.Fixed{Prefill: 10, Decode: 1}, Tiers: tiers.New(tc), Events: true})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func tokens(from, n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = uint32(from + i)
	}
	return out
}

// runUntilDone steps c from now, each pass at the previous one's end, until
// it holds nothing; it returns the passes' starts and ends and the pass
// that admitted each request.
type tierTrace struct {
	starts, ends []timing.Time
	admitted     map[uint64]Admission
	admittedAt   map[uint64]timing.Time
	parkedAt     map[uint64]timing.Time
	order        []uint64 // first admissions, in the order the passes made them
}

func runUntilDone(t *testing.T, c *Core, now timing.Time) (*tierTrace, timing.Time) {
	t.Helper()
	tr := &tierTrace{admitted: map[uint64]Admission{}, admittedAt: map[uint64]timing.Time{}, parkedAt: map[uint64]timing.Time{}}
	for i := 0; !c.Empty(); i++ {
		if i > 100 {
			t.Fatal("not done after 100 passes")
		}
		p := c.Step(now)
		if !p.Busy {
			t.Fatalf("pass at %v is stuck: %+v", now, p.Metrics)
		}
		tr.starts, tr.ends = append(tr.starts, p.Start), append(tr.ends, p.End)
		for _, a := range p.Admissions {
			if a.Parked {
				tr.parkedAt[a.ID] = p.Start
				continue
			}
			if _, ok := tr.admitted[a.ID]; !ok {
				tr.admitted[a.ID], tr.admittedAt[a.ID] = a, p.Start
				tr.order = append(tr.order, a.ID)
			}
		}
		if err := c.cfg.Tiers.Check(); err != nil {
			t.Fatal(err)
		}
		now = p.End
	}
	return tr, now
}

// Spec §5.4–§5.6 on one core: G1 eviction offloads and quarantines the
// slot; the allocation that needs it waits (a pass with nothing else to do
// ends at the copy's deadline: the stall rule); a later request with the
// evicted prefix reserves its G1 slot first, parks while the block comes
// back from G2, and is admitted reusing it.
func TestTiersOffloadStallOnboard(t *testing.T) {
	c := tierCore(t, 8, 0)
	// A: 8 tokens (2 blocks), one output token: its blocks stay cached.
	if err := c.Submit(Request{ID: 1, Prompt: tokens(1, 8), MaxOutput: 1}); err != nil {
		t.Fatal(err)
	}
	_, now := runUntilDone(t, c, 0)
	if c.Pool().Inactive() != 2 {
		t.Fatalf("A left %d cached blocks, want 2", c.Pool().Inactive())
	}

	// B: 16 new tokens need all 4 slots: A's 2 blocks are evicted to G2,
	// and B waits for the 2 MB copy (2 ms).
	c.Submit(Request{ID: 2, Prompt: tokens(100, 16), MaxOutput: 1})
	tr, now2 := runUntilDone(t, c, now)
	if tr.ends[0] != now+timing.FromMs(2) || len(tr.starts) < 2 {
		t.Fatalf("first pass [%v, %v]: want a stall until the offload ends at %v", tr.starts[0], tr.ends[0], now+timing.FromMs(2))
	}
	if tr.admittedAt[2] != now+timing.FromMs(2) {
		t.Fatalf("B admitted at %v, want %v (when its slots came back)", tr.admittedAt[2], now+timing.FromMs(2))
	}
	if n := c.cfg.Tiers.Snapshot().Tiers[0].Offloaded; n != 2 {
		t.Fatalf("G2 took %d blocks, want A's 2", n)
	}

	// C: A's prompt again. vLLM recomputes the last block of a full hit, so
	// one block (4 tokens) comes back from G2: its G1 slot is made first
	// (evicting one of B's blocks: a 1 ms copy), then the 1 ms onboard,
	// then the slot for the recomputed block (another of B's: 1 ms more).
	c.Submit(Request{ID: 3, Prompt: tokens(1, 8), MaxOutput: 1})
	tr, _ = runUntilDone(t, c, now2)
	park, ok := tr.parkedAt[3]
	if !ok {
		t.Fatal("C never parked")
	}
	if park != now2+timing.FromMs(1) {
		t.Errorf("C parked at %v, want %v (after its G1 slot's offload)", park, now2+timing.FromMs(1))
	}
	if got := tr.admittedAt[3]; got != park+timing.FromMs(2) {
		t.Errorf("C admitted at %v, want %v (the 1 ms onboard, the 1 ms offload)", got, park+timing.FromMs(2))
	}
	if a := tr.admitted[3]; a.Reused != 4 || a.Again {
		t.Errorf("C admitted %+v, want 4 reused tokens", a)
	}
	snap := c.cfg.Tiers.Snapshot()
	if snap.Tiers[0].Hits != 1 || snap.Tiers[0].Onboarded != 1 || snap.Tiers[0].Offloaded != 4 {
		t.Errorf("G2 stats %+v", snap.Tiers[0])
	}
}

// Parked requests come back and every one is admitted, reusing what it
// onboarded, in the order they parked. (Here they park a copy apart, as
// the G1 of 4 blocks makes them; returns in one tick keep their park order
// by tickTiers's construction.)
func TestTiersParkedReturnInOrder(t *testing.T) {
	c := tierCore(t, 8, 0)
	c.cfg.NumBlocks = 4
	c.Submit(Request{ID: 1, Prompt: tokens(1, 8), MaxOutput: 1})
	c.Submit(Request{ID: 2, Prompt: tokens(50, 8), MaxOutput: 1})
	_, now := runUntilDone(t, c, 0)
	c.Submit(Request{ID: 3, Prompt: tokens(200, 16), MaxOutput: 1}) // pushes both prefixes to G2
	_, now = runUntilDone(t, c, now)
	c.Submit(Request{ID: 4, Prompt: tokens(1, 8), MaxOutput: 1})
	c.Submit(Request{ID: 5, Prompt: tokens(50, 8), MaxOutput: 1})
	tr, _ := runUntilDone(t, c, now)
	for _, id := range []uint64{4, 5} {
		if _, ok := tr.parkedAt[id]; !ok {
			t.Fatalf("request %d never parked", id)
		}
	}
	if tr.parkedAt[4] > tr.parkedAt[5] {
		t.Fatalf("4 parked at %v, after 5 at %v", tr.parkedAt[4], tr.parkedAt[5])
	}
	if !slices.Equal(tr.order, []uint64{4, 5}) || tr.admitted[4].Reused != 4 || tr.admitted[5].Reused != 4 {
		t.Errorf("admitted in order %v, %+v; want 4 then 5, each reusing its onboarded block", tr.order, tr.admitted)
	}
}

// The rejected combinations (spec §5: vLLM/TRT-LLM core, kvbm G1 only).
func TestTiersRejectedCombinations(t *testing.T) {
	tc, _ := tiers.Resolve(tiers.Settings{BlockSize: 4, BytesPerToken: 1, G2Blocks: 4, BatchBlocks: 1})
	base := Config{BlockSize: 4, NumBlocks: 4, PrefixCaching: true, G1: KVBMG1, Model: timing.Fixed{}, Tiers: tiers.New(tc)}
	tests := []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"native G1", func(c *Config) { c.G1 = NativeG1 }, "tiers: need g1_backend: kvbm"},
		{"sglang", func(c *Config) { c.Policy = SGLang }, "tiers: not supported by the sglang backend"},
		{"no prefix caching", func(c *Config) { c.PrefixCaching = false }, "tiers: need prefix_caching: true"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base
			tc.edit(&cfg)
			if _, err := NewRank(cfg); err == nil || err.Error()[:len(tc.want)] != tc.want {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}
