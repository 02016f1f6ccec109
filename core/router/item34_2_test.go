package router

import (
	"math/rand/v2"
	"testing"

	"github.com/dynosim/dynosim-web/kv"
	"github.com/dynosim/dynosim-web/timing"
)

// tableModel is what a blockTable must equal: the two Go maps it replaced.
type tableModel struct {
	ix  map[uint64]int32
	cnt map[uint64]int
}

// checkTable compares t with the model on every key in keys and on the
// counters, and checks that every occupied slot is reachable from its home
// (the backward-shift deletion kept the probe runs intact).
func checkTable(tb testing.TB, t *blockTable, m *tableModel, keys []uint64) {
	tb.Helper()
	for _, k := range keys {
		if got, want := t.ixOf(k), m.ix[k]; got != want {
			tb.Fatalf("key %#x: ix %d, model %d", k, got, want)
		}
		i := t.find(k)
		got := 0
		if i >= 0 {
			got = int(t.slots[i].cnt)
		}
		if want := m.cnt[k]; got != want {
			tb.Fatalf("key %#x: cnt %d, model %d", k, got, want)
		}
	}
	if t.nIx != len(m.ix) || t.nCnt != len(m.cnt) {
		tb.Fatalf("counters nIx %d nCnt %d, model %d %d", t.nIx, t.nCnt, len(m.ix), len(m.cnt))
	}
	occupied := 0
	for i, e := range t.slots {
		if e.ix == 0 && e.cnt == 0 {
			continue
		}
		occupied++
		if t.find(e.key) != i {
			tb.Fatalf("slot %d (key %#x) unreachable from its home", i, e.key)
		}
	}
	if occupied != t.n || 2*t.n > len(t.slots) && t.n > 0 {
		tb.Fatalf("occupied %d, n %d, slots %d", occupied, t.n, len(t.slots))
	}
}

// runOps drives a table and the model with ops read from data: each op is
// 2 bytes (kind, key index over a small key set so keys repeat and runs
// collide). Keys share their low bits so they crowd a few homes.
func runOps(tb testing.TB, data []byte) {
	keys := make([]uint64, 24)
	for i := range keys {
		keys[i] = uint64(i)<<58 | 7 // Fibonacci hashing spreads these, but only 24
	}
	var t blockTable
	m := &tableModel{ix: map[uint64]int32{}, cnt: map[uint64]int{}}
	for len(data) >= 2 {
		op, k := data[0]%5, keys[int(data[1])%len(keys)]
		data = data[2:]
		switch op {
		case 0: // store (the indexer's stored bit)
			v := t.ixOf(k) | 1
			t.setIx(k, v)
			m.ix[k] = v
		case 1: // remove the stored bit
			v := t.ixOf(k) &^ 1
			t.setIx(k, v)
			if v == 0 {
				delete(m.ix, k)
			} else {
				m.ix[k] = v
			}
		case 2: // remember (a TTL node)
			v := t.ixOf(k)&1 | int32(k>>58+1)<<1
			t.setIx(k, v)
			m.ix[k] = v
		case 3:
			t.inc(k)
			m.cnt[k]++
		case 4:
			t.dec(k)
			if m.cnt[k] > 1 {
				m.cnt[k]--
			} else {
				delete(m.cnt, k)
			}
		}
		checkTable(tb, &t, m, keys)
	}
}

// TestItem34_2BlockTableMatchesMaps: random op sequences leave the table
// equal to the two maps it replaced, probe runs intact.
func TestItem34_2BlockTableMatchesMaps(t *testing.T) {
	for _, tc := range []struct {
		name string
		seed uint64
		ops  int
	}{{"short", 1, 50}, {"long", 2, 5000}, {"other seed", 3, 5000}} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(tc.seed, 0))
			data := make([]byte, 2*tc.ops)
			for i := range data {
				data[i] = byte(rng.UintN(256))
			}
			runOps(t, data)
		})
	}
}

func FuzzItem34_2BlockTable(f *testing.F) {
	f.Add([]byte{3, 1, 3, 1, 0, 1, 4, 1, 1, 1, 4, 1})
	f.Add([]byte{0, 0, 0, 24, 0, 48, 1, 0, 3, 24, 2, 48, 1, 24})
	f.Fuzz(func(t *testing.T, data []byte) { runOps(t, data) })
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
