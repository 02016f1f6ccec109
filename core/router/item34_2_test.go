package router

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dynosim/dynosim-web/kv"
	"github.com/dynosim/dynosim-web/timing"
)

// runTreeOps holds and releases sequences drawn from a small trie (data
// picks each next block among 3, and the length) and checks the tree's
// prefix and held counts against a recount from the held sequences.
func runTreeOps(tb testing.TB, data []byte) {
	var t activeTree
	var held [][]uint64
	var leaves []int32
	chain := func(d []byte) []uint64 {
		var s []uint64
		h := uint64(0)
		for _, b := range d {
			h = h*0x100000001b3 + uint64(b%3) + 1 // chained: names the whole prefix
			s = append(s, h)
		}
		return s
	}
	for len(data) >= 2 {
		op, n := data[0], int(data[1]%9)
		data = data[2:]
		if op%3 == 0 && len(held) > 0 { // release one
			i := int(op/3) % len(held)
			t.release(leaves[i])
			held = append(held[:i], held[i+1:]...)
			leaves = append(leaves[:i], leaves[i+1:]...)
		} else {
			n = min(n, len(data))
			s := chain(data[:n])
			leaves = append(leaves, t.hold(s))
			held = append(held, s)
		}
		count := map[uint64]int{}
		for _, s := range held {
			for _, h := range s {
				count[h]++
			}
		}
		if t.held != len(count) {
			tb.Fatalf("held %d, recount %d", t.held, len(count))
		}
		for _, probe := range [][]uint64{chain(data[:min(6, len(data))]), chain([]byte{0, 1, 2, 0}), chain([]byte{1, 1})} {
			want := 0
			for want < len(probe) && count[probe[want]] > 0 {
				want++
			}
			if got := t.prefix(probe); got != want {
				tb.Fatalf("prefix %d, recount %d", got, want)
			}
		}
	}
}

func randomBytes(seed uint64, n int) []byte {
	rng := rand.New(rand.NewPCG(seed, 0))
	data := make([]byte, n)
	for i := range data {
		data[i] = byte(rng.UintN(256))
	}
	return data
}

// TestItem34_2ActiveTreeMatchesRecount: random op sequences leave the tree
// equal to a recount of the sequences it holds.
func TestItem34_2ActiveTreeMatchesRecount(t *testing.T) {
	for _, tc := range []struct {
		name string
		seed uint64
		ops  int
	}{{"short", 1, 50}, {"long", 2, 3000}, {"other seed", 3, 3000}} {
		t.Run(tc.name, func(t *testing.T) { runTreeOps(t, randomBytes(tc.seed, 2*tc.ops)) })
	}
}

func FuzzItem34_2ActiveTree(f *testing.F) {
	f.Add([]byte{1, 4, 0, 1, 2, 0, 1, 2, 1, 1, 0, 0, 3, 0})
	f.Add([]byte{1, 8, 1, 1, 1, 1, 1, 1, 1, 1, 2, 3, 1, 1, 1, 0, 0, 0, 3, 3})
	f.Fuzz(func(t *testing.T, data []byte) { runTreeOps(t, data) })
}

// refKV recomputes what the KV router's incremental state must equal from
// scratch: for every (worker, rank), each prompt block's active holders,
// counted over the requests placed there and not finished.
type refKV struct {
	placed map[uint64]refSeq
}

type refSeq struct {
	w, k   int
	hashes []uint64
}

// check compares r's runs and held counts on every rank, for probe, with
// a full rescore from the active requests and the indexer's own overlap.
func (ref *refKV) check(t *testing.T, r *KV, workers int, probe []uint64) {
	t.Helper()
	for w := range workers {
		held := map[uint64]int{}
		for _, s := range ref.placed {
			if s.w == w {
				for _, h := range s.hashes {
					held[h]++
				}
			}
		}
		shared := 0
		for shared < len(probe) && held[probe[shared]] > 0 {
			shared++
		}
		overlap, gotShared := r.idx.Runs(w, 0, probe)
		if want := r.idx.Overlap(w, 0, probe); overlap != want {
			t.Fatalf("worker %d: overlap %d, full rescore %d", w, overlap, want)
		}
		if gotShared != shared || r.idx.Held(w, 0) != len(held) {
			t.Fatalf("worker %d: shared %d held %d, full rescore %d %d", w, gotShared, r.idx.Held(w, 0), shared, len(held))
		}
	}
}

// TestItem34_2IncrementalEqualsRescore: over random placements, KV events
// and completions on prompts that share prefixes, the router's one-walk
// overlap and its incremental active-block counts equal a full recount.
func TestItem34_2IncrementalEqualsRescore(t *testing.T) {
	for _, tc := range []struct {
		name      string
		useEvents bool
		seed      uint64
	}{{"kv events", true, 1}, {"approximate", false, 2}, {"kv events, other seed", true, 3}} {
		t.Run(tc.name, func(t *testing.T) {
			const bs, workers = 4, 3
			r, err := NewKV(KVConfig{Cost: DefaultCostConfig(), BlockSize: bs, Seed: tc.seed, UseEvents: tc.useEvents})
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(tc.seed, 1))
			ref := &refKV{placed: map[uint64]refSeq{}}
			v := view{1, 1, 1}
			// prompts: a few shared stems, random tails
			prompt := func() []uint32 {
				p := make([]uint32, 0, 40)
				stem := rng.UintN(3)
				for range rng.UintN(5) * bs {
					p = append(p, uint32(stem)*1000+uint32(len(p)))
				}
				for range rng.UintN(20) {
					p = append(p, uint32(rng.UintN(4)))
				}
				return p
			}
			stored := make([]map[uint64]bool, workers)
			evID := make([]uint64, workers)
			for w := range stored {
				stored[w] = map[uint64]bool{}
			}
			var ids []uint64
			now := timing.Time(0)
			for id := uint64(1); id <= 400; id++ {
				now += timing.Time(rng.UintN(1e9))
				switch rng.UintN(3) {
				case 0, 1: // place
					p := prompt()
					pl, ok := r.Place(&Request{ID: id, Now: now, Prompt: p}, v)
					if !ok {
						t.Fatal("no queue configured, yet held")
					}
					hs := r.idx.Hashes(p, nil)
					ref.placed[id] = refSeq{pl.Worker, pl.Rank, hs}
					ids = append(ids, id)
					if tc.useEvents && len(hs) > 0 { // the worker caches the new blocks
						ev := kv.Event{ID: evID[pl.Worker], Kind: kv.Stored}
						for i, h := range hs {
							if stored[pl.Worker][h] {
								continue
							}
							if len(ev.Blocks) == 0 && i > 0 {
								ev.Parent, ev.HasParent = hs[i-1], true
							}
							ev.Blocks = append(ev.Blocks, kv.StoredBlock{BlockHash: h})
							stored[pl.Worker][h] = true
						}
						if len(ev.Blocks) > 0 {
							evID[pl.Worker]++
							r.Observe(pl.Worker, []kv.Event{ev})
						}
					}
				case 2: // finish one
					if len(ids) == 0 {
						continue
					}
					i := rng.IntN(len(ids))
					done := ids[i]
					ids = append(ids[:i], ids[i+1:]...)
					r.PrefillDone(done, now)
					r.Finished(done, now)
					delete(ref.placed, done)
				}
				probe := r.idx.Hashes(prompt(), nil)
				ref.check(t, r, workers, probe)
			}
		})
	}
}

// BenchmarkItem34_2Place is the KV router's hot path on 8 workers: place a
// request whose prompt shares a stem with earlier ones, apply the stored
// events, finish the oldest when 64 are active (prompts of 128 blocks of
// 64 tokens; the benchmark trace's mean is about 190).
func BenchmarkItem34_2Place(b *testing.B) {
	const bs, blocks, workers, active = 64, 128, 8, 64
	r, err := NewKV(KVConfig{Cost: DefaultCostConfig(), BlockSize: bs, Seed: 1, UseEvents: true})
	if err != nil {
		b.Fatal(err)
	}
	v := view{1, 1, 1, 1, 1, 1, 1, 1}
	rng := rand.New(rand.NewPCG(1, 2))
	prompt := make([]uint32, bs*blocks)
	evID := make([]uint64, workers)
	var ids []uint64
	var scratch []uint64
	b.ReportAllocs()
	id := uint64(0)
	for b.Loop() {
		id++
		stem := uint32(rng.UintN(16))
		for i := range prompt {
			prompt[i] = stem
		}
		tail := rng.UintN(64) // a bounded universe: the index stops growing
		for i := bs * blocks / 2; i < len(prompt); i += 2 {
			prompt[i] = uint32(tail)<<16 + uint32(i)
		}
		p, _ := r.Place(&Request{ID: id, Now: timing.Time(id), Prompt: prompt}, v)
		scratch = r.idx.Hashes(prompt, scratch[:0])
		ev := kv.Event{ID: evID[p.Worker], Kind: kv.Stored}
		for _, h := range scratch[p.Overlap/bs:] {
			ev.Blocks = append(ev.Blocks, kv.StoredBlock{BlockHash: h})
		}
		if p.Overlap > 0 {
			ev.Parent, ev.HasParent = scratch[p.Overlap/bs-1], true
		}
		if len(ev.Blocks) > 0 {
			evID[p.Worker]++
			r.Observe(p.Worker, []kv.Event{ev})
		}
		if ids = append(ids, id); len(ids) > active {
			r.PrefillDone(ids[0], timing.Time(id))
			r.Finished(ids[0], timing.Time(id))
			ids = ids[1:]
		}
	}
}

// TestItem34_2HeldRequestsReuseHashes: a held request offered again reuses
// the block hashes it was held with and the walks of ranks that did not
// change (KV events and placements change them); a router forced to hash
// and walk every offer afresh makes the same placements, holds, queue
// order and candidates.
func TestItem34_2HeldRequestsReuseHashes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy string
		seed   uint64
	}{{"fcfs", "fcfs", 1}, {"wspt", "wspt", 2}, {"lcfs", "lcfs", 3}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := KVConfig{Cost: DefaultCostConfig(), BlockSize: 4, Seed: tc.seed, UseEvents: true,
				Threshold: 0.5, MaxBatchedTokens: 64, QueuePolicy: tc.policy}
			reuse, _ := NewKV(cfg)
			fresh, _ := NewKV(cfg)
			v := view{1, 1}
			rng := rand.New(rand.NewPCG(tc.seed, 3))
			prompts := map[uint64][]uint32{}
			stored := []map[uint64]bool{{}, {}}
			evID := make([]uint64, 2)
			placedOn := map[uint64]int{}
			cache := func(id uint64) { // request id's worker caches its prompt's new blocks
				w := placedOn[id]
				hs := reuse.idx.Hashes(prompts[id], nil)
				ev := kv.Event{ID: evID[w], Kind: kv.Stored}
				for i, h := range hs {
					if stored[w][h] {
						continue
					}
					if len(ev.Blocks) == 0 && i > 0 {
						ev.Parent, ev.HasParent = hs[i-1], true
					}
					ev.Blocks = append(ev.Blocks, kv.StoredBlock{BlockHash: h})
					stored[w][h] = true
				}
				if len(ev.Blocks) > 0 {
					evID[w]++
					reuse.Observe(w, []kv.Event{ev})
					fresh.Observe(w, []kv.Event{ev})
				}
			}
			var held, active []uint64
			offer := func(id uint64, now timing.Time) bool {
				if q, ok := fresh.queued[id]; ok {
					q.isl = -1 // not the prompt's length: hash and walk afresh
					fresh.queued[id] = q
				}
				p1, ok1 := reuse.Place(&Request{ID: id, Now: now, Prompt: prompts[id]}, v)
				p2, ok2 := fresh.Place(&Request{ID: id, Now: now, Prompt: prompts[id]}, v)
				if p1 != p2 || ok1 != ok2 || !slices.Equal(reuse.cands, fresh.cands) {
					t.Fatalf("request %d: reuse %v %v, fresh %v %v\n%+v\n%+v", id, p1, ok1, p2, ok2, reuse.cands, fresh.cands)
				}
				if ok1 {
					placedOn[id] = p1.Worker
					// what the engine takes: a held request's kept hashes
					// and locals, as hashing again gives them
					_, h1, l1 := reuse.PromptHashes()
					_, h2, l2 := fresh.PromptHashes()
					if !slices.Equal(h1, h2) || !slices.Equal(l1, l2) || len(l1) != len(h1) {
						t.Fatalf("request %d: reuse hashes %x locals %x, fresh %x %x", id, h1, l1, h2, l2)
					}
				}
				return ok1
			}
			heldCount := 0
			for id := uint64(1); id <= 300; id++ {
				now := timing.Time(id) * 1e6
				p := make([]uint32, 8+rng.IntN(24))
				for i := range p {
					p[i] = uint32(rng.IntN(3)*100 + i)
				}
				prompts[id] = p
				if offer(id, now) {
					active = append(active, id)
				} else {
					held = append(held, id)
					heldCount++
				}
				if len(active) > 0 && rng.IntN(2) == 0 { // a request progresses
					i := rng.IntN(len(active))
					done := active[i]
					finish := rng.IntN(2) == 0
					if rng.IntN(3) == 0 {
						cache(done)
					}
					for _, r := range []*KV{reuse, fresh} {
						r.PrefillDone(done, now)
						if finish {
							r.Finished(done, now)
						}
					}
					active = append(active[:i], active[i+1:]...)
				}
				for len(held) > 0 { // a pass ended: offer the held ones in queue order
					i1, i2 := reuse.Next(held), fresh.Next(held)
					if i1 != i2 {
						t.Fatalf("queue order: reuse %d, fresh %d", i1, i2)
					}
					if !offer(held[i1], now) {
						break
					}
					active = append(active, held[i1])
					held = append(held[:i1], held[i1+1:]...)
				}
			}
			if heldCount == 0 {
				t.Fatal("nothing was held: the test tests nothing")
			}
		})
	}
}
