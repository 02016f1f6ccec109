package engine

import (
	"fmt"
	"slices"
	"testing"

	"github.com/dynosim/dynosim-web/timing"
)

// FuzzHandoffRanks drives a holding prefill rank and a decode rank of
// either core with random submissions, reservations, activations,
// cancellations, releases and passes, and checks the disaggregation
// contract: a reservation is granted once, with its resident and missing
// tokens covering the prompt and the missing ones never more than it;
// Activate and Cancel succeed only on reservations held, Release only on
// holds; and once every hold is released and every reservation activated
// or canceled, both ranks drain and give every block back.
//
//	go test ./core/engine -run '^$' -fuzz '^FuzzHandoffRanks$' -fuzztime 60s
func FuzzHandoffRanks(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})
	f.Add([]byte{1, 0, 0, 2, 2, 3, 4, 4, 5, 1, 2, 6, 7, 3, 3})
	f.Add([]byte{0, 7, 7, 7, 0, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 5, 5, 6, 6})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &fzReader{b: data}
		sg := r.next()%2 == 1
		blocks := 8 + int(r.next()%24)
		mk := func(mod func(*Config)) Rank {
			cfg := cfg4(blocks, 32, 4, true)
			if sg {
				cfg = sgcfg(4, blocks, 32)
			}
			mod(&cfg)
			c, err := NewRank(cfg)
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
		src := mk(func(c *Config) { c.Prefill = &Handoff{Hold: true} })
		dst := mk(func(c *Config) { c.Decode = true })
		prompt := func(id uint64) []uint32 {
			// Prompts share prefixes (ids of one residue class), so the
			// destination's cache matters.
			n := 1 + int(id*7%40)
			p := make([]uint32, n)
			for i := range p {
				p[i] = uint32(id%3*1000 + uint64(i))
			}
			return p
		}
		var (
			next                     uint64
			pending, granted, holds  []uint64
			now                      timing.Time
			srcLive, dstLive, tokens int
		)
		step := func(c Rank, isDst bool) {
			p := c.Step(now)
			if p.End < now {
				t.Fatalf("pass ends at %v before it starts at %v", p.End, now)
			}
			now = max(p.End, now+1)
			for _, g := range p.Reserved {
				i := slices.Index(pending, g.ID)
				if !isDst || i < 0 {
					t.Fatalf("reservation %+v not pending (%v)", g, pending)
				}
				n := len(prompt(g.ID))
				if g.Missing > n || g.Resident+g.Missing < n || g.Resident < 0 || g.Missing < 0 {
					t.Fatalf("reservation %+v of a %d-token prompt", g, n)
				}
				pending = slices.Delete(pending, i, i+1)
				granted = append(granted, g.ID)
			}
			for _, s := range p.Signals {
				tokens += b2i(s.HasToken)
				if !s.Completed {
					continue
				}
				if isDst {
					dstLive--
					continue
				}
				srcLive--
				if !s.Rejected {
					holds = append(holds, s.ID)
				}
			}
		}
		pick := func(ids []uint64) (uint64, bool) {
			if len(ids) == 0 {
				return 0, false
			}
			return ids[int(r.next())%len(ids)], true
		}
		for ops := 0; r.more() && ops < fzMaxOpSteps; ops++ {
			switch r.next() % 8 {
			case 0:
				next++
				if err := src.Submit(Request{ID: next, Prompt: prompt(next), MaxOutput: 1}); err != nil {
					t.Fatal(err)
				}
				srcLive++
			case 1:
				next++
				why, err := dst.Reserve(Request{ID: next, Prompt: prompt(next), MaxOutput: 1 + int(r.next()%4)})
				if err != nil {
					t.Fatal(err)
				}
				if why == NotRejected {
					pending = append(pending, next)
				} else if len(prompt(next)) <= blocks*4 {
					t.Fatalf("a %d-token prompt rejected on %d blocks: %v", len(prompt(next)), blocks, why)
				}
			case 2:
				step(src, false)
			case 3:
				step(dst, true)
			case 4:
				if id, ok := pick(granted); ok {
					if !dst.Activate(id) {
						t.Fatalf("Activate(%d) refused a granted reservation", id)
					}
					granted = slices.DeleteFunc(granted, func(g uint64) bool { return g == id })
					dstLive++
				}
			case 5:
				if id, ok := pick(append(slices.Clip(pending), granted...)); ok {
					if !dst.Cancel(id) {
						t.Fatalf("Cancel(%d) refused a reservation", id)
					}
					pending = slices.DeleteFunc(pending, func(g uint64) bool { return g == id })
					granted = slices.DeleteFunc(granted, func(g uint64) bool { return g == id })
				}
			case 6:
				if id, ok := pick(holds); ok {
					if !src.Release(id) || src.Release(id) {
						t.Fatalf("Release(%d) must free the hold exactly once", id)
					}
					holds = slices.DeleteFunc(holds, func(g uint64) bool { return g == id })
				}
			case 7:
				if dst.Activate(next+1) || dst.Cancel(next+1) || src.Release(next+1) {
					t.Fatal("an unknown id was accepted")
				}
			}
			if m := dst.Metrics(); m.Reserved != len(pending)+len(granted) {
				t.Fatalf("destination reports %d reservations, the driver holds %d", m.Reserved, len(pending)+len(granted))
			}
			if m := src.Metrics(); m.Holds != len(holds) {
				t.Fatalf("source reports %d holds, the driver saw %d", m.Holds, len(holds))
			}
		}
		// Wind down: cancel what waits, activate what was granted, release
		// every hold, then drain both ranks.
		for _, id := range pending {
			dst.Cancel(id)
		}
		pending = nil
		for i := 0; i < fzMaxDrainPass && (srcLive > 0 || dstLive > 0 || len(granted) > 0 || len(holds) > 0); i++ {
			for _, id := range granted {
				if !dst.Activate(id) {
					t.Fatalf("Activate(%d) refused", id)
				}
				dstLive++
			}
			granted = nil
			for _, id := range holds {
				src.Release(id)
			}
			holds = nil
			step(src, false)
			step(dst, true)
		}
		for name, c := range map[string]Rank{"source": src, "destination": dst} {
			m := c.Metrics()
			if !c.Empty() || m.Holds != 0 || m.Reserved != 0 {
				t.Fatalf("%s does not drain: %+v", name, m)
			}
			free := fmt.Sprint(m.ActiveBlocks)
			if sgc, ok := c.(*SGLangCore); ok {
				if got := sgc.pool.Available()*4 + sgc.tree.Evictable(); got != blocks*4 {
					t.Fatalf("%s: %d free or evictable tokens of %d", name, got, blocks*4)
				}
			} else if m.ActiveBlocks != 0 {
				t.Fatalf("%s: %s blocks still active", name, free)
			}
		}
	})
}
