package router

import (
	"slices"
	"testing"

	"github.com/dynosim/dynosim-web/core/engine"
	"github.com/dynosim/dynosim-web/kv"
	"github.com/dynosim/dynosim-web/timing"
)

// evlog builds consistent event streams for tests, numbering ids per rank.
type evlog struct{ next map[int]uint64 }

func (l *evlog) id(rank int) uint64 {
	if l.next == nil {
		l.next = map[int]uint64{}
	}
	id := l.next[rank]
	l.next[rank] = id + 1
	return id
}

// stored is one Stored event of hashes on rank; parent 0 means none.
func (l *evlog) stored(rank int, parent uint64, hashes ...uint64) kv.Event {
	ev := kv.Event{ID: l.id(rank), DPRank: rank, Kind: kv.Stored, Parent: parent, HasParent: parent != 0}
	for _, h := range hashes {
		ev.Blocks = append(ev.Blocks, kv.StoredBlock{BlockHash: h})
	}
	return ev
}

func (l *evlog) removed(rank int, hashes ...uint64) kv.Event {
	return kv.Event{ID: l.id(rank), DPRank: rank, Kind: kv.Removed, Removed: hashes}
}

func mustApply(t *testing.T, ix *Indexer, worker int, events ...kv.Event) {
	t.Helper()
	if err := ix.Apply(worker, events); err != nil {
		t.Fatal(err)
	}
}

func TestIndexerStoredAndRemovedEventsUpdateTheIndex(t *testing.T) {
	var l evlog
	ix := NewIndexer(4)
	mustApply(t, ix, 0, l.stored(0, 0, 1, 2, 3), l.stored(0, 3, 4))
	if n := ix.Len(0, 0); n != 4 {
		t.Fatalf("len %d after stores, want 4", n)
	}
	mustApply(t, ix, 0, l.removed(0, 4, 3))
	for _, c := range []struct {
		hashes []uint64
		want   int
	}{
		{[]uint64{1, 2, 3, 4}, 2}, // 3 removed: the match stops there
		{[]uint64{1, 2}, 2},
		{[]uint64{4}, 0},
		{nil, 0},
	} {
		if got := ix.Overlap(0, 0, c.hashes); got != c.want {
			t.Errorf("overlap %v = %d, want %d", c.hashes, got, c.want)
		}
	}
	if n := ix.Len(0, 0); n != 2 {
		t.Fatalf("len %d after removals, want 2", n)
	}
}

func TestIndexerRemovedHashStopsMatching(t *testing.T) {
	var l evlog
	ix := NewIndexer(4)
	mustApply(t, ix, 2, l.stored(0, 0, 10, 11, 12))
	if got := ix.Overlap(2, 0, []uint64{10, 11, 12}); got != 3 {
		t.Fatalf("overlap %d before removal, want 3", got)
	}
	mustApply(t, ix, 2, l.removed(0, 10))
	if got := ix.Overlap(2, 0, []uint64{10, 11, 12}); got != 0 {
		t.Fatalf("overlap %d after removing block 0, want 0", got)
	}
	if got := ix.Overlap(2, 0, []uint64{11}); got != 1 {
		t.Fatalf("overlap of the surviving child %d, want 1", got)
	}
}

func TestIndexerOverlapIsTheLeadingPrefixOnly(t *testing.T) {
	var l evlog
	ix := NewIndexer(4)
	// Blocks 1, 2 and 4, 5 are stored; 3 is not: a gap.
	mustApply(t, ix, 0, l.stored(0, 0, 1, 2), l.stored(0, 0, 4, 5))
	for _, c := range []struct {
		name   string
		hashes []uint64
		want   int
	}{
		{"gap stops the match", []uint64{1, 2, 3, 4, 5}, 2},
		{"first block missing", []uint64{3, 4, 5}, 0},
		{"later blocks alone still count from 0", []uint64{4, 5}, 2},
		{"unknown hash", []uint64{99}, 0},
		{"unknown worker", nil, 0},
	} {
		if got := ix.Overlap(0, 0, c.hashes); got != c.want {
			t.Errorf("%s: overlap %v = %d, want %d", c.name, c.hashes, got, c.want)
		}
	}
	if got := ix.Overlap(7, 0, []uint64{1}); got != 0 {
		t.Errorf("unknown worker overlap %d", got)
	}
}

func TestIndexerRanksAndWorkersAreIsolated(t *testing.T) {
	var l0, l1 evlog
	ix := NewIndexer(4)
	mustApply(t, ix, 0, l0.stored(1, 0, 1, 2))
	mustApply(t, ix, 1, l1.stored(0, 0, 1))
	for _, c := range []struct {
		worker, rank, want int
	}{
		{0, 0, 0}, // the other rank of the same worker
		{0, 1, 2},
		{1, 0, 1},
		{1, 1, 0},
		{0, 2, 0},
	} {
		if got := ix.Overlap(c.worker, c.rank, []uint64{1, 2}); got != c.want {
			t.Errorf("worker %d rank %d: overlap %d, want %d", c.worker, c.rank, got, c.want)
		}
	}
	ix.RemoveWorker(0)
	if got := ix.Overlap(0, 1, []uint64{1, 2}); got != 0 {
		t.Errorf("removed worker still matches %d", got)
	}
	if got := ix.Overlap(1, 0, []uint64{1, 2}); got != 1 {
		t.Errorf("other worker lost its blocks: %d", got)
	}
	// A worker that rejoins starts over: its event ids restart at 0.
	var again evlog
	mustApply(t, ix, 0, again.stored(0, 0, 5))
}

// A placement decided before a pass's end does not see the blocks that pass
// stored: the policy applies a pass's events only at its end.
func TestIndexerEventsBecomeVisibleOnlyWhenApplied(t *testing.T) {
	cfg := engine.Config{
		BlockSize: 4, NumBlocks: 64, ChunkedPrefill: true, PrefixCaching: true,
		Model: timing.Polynomial{}, Events: true,
	}
	c, err := engine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	prompt := []uint32{1, 2, 3, 4, 5, 6, 7, 8, 9}
	if err := c.Submit(engine.Request{ID: 1, Prompt: prompt, MaxOutput: 2}); err != nil {
		t.Fatal(err)
	}
	ix := NewIndexer(4)
	hashes := ix.Hashes(prompt, nil)
	p := c.Step(0)
	if len(p.Events) == 0 {
		t.Fatal("the prefill pass stored nothing")
	}
	// Mid-pass (before p.End) the router still sees an empty worker.
	if got := ix.Overlap(0, 0, hashes); got != 0 {
		t.Fatalf("overlap %d before the pass end", got)
	}
	mustApply(t, ix, 0, p.Events...)
	if got := ix.Overlap(0, 0, hashes); got != len(hashes) {
		t.Fatalf("overlap %d after the pass end, want %d", got, len(hashes))
	}
}

func TestIndexerRememberedHashesExpireAfterTheTTL(t *testing.T) {
	s := timing.Time(1e9)
	var l evlog
	ix := NewIndexer(4)
	if ix.TTL != 120*s {
		t.Fatalf("default TTL %d", ix.TTL)
	}
	ix.Remember(0, 0, []uint64{1, 2, 3}, 0)
	ix.Remember(1, 0, []uint64{1}, 10*s)
	ix.Remember(0, 0, []uint64{1}, 30*s)                    // refreshes block 1 only
	mustApply(t, ix, 0, l.stored(0, 0, 2), l.removed(0, 2)) // events do not end a remembered life
	mustApply(t, ix, 0, l.stored(0, 0, 3))                  // but keep a stored one past it
	for _, c := range []struct {
		now        timing.Time
		w0, w1, w3 int // overlap of [1 2 3] on worker 0, [1] on worker 1, [3] on worker 0
	}{
		{0, 3, 1, 1},
		{120*s - 1, 3, 1, 1},
		{120 * s, 1, 1, 1}, // 2 and 3 expire; 1 was refreshed; 3 is also stored
		{130 * s, 1, 0, 1}, // worker 1's block 1
		{150 * s, 0, 0, 1}, // the refreshed block 1
		{1000 * s, 0, 0, 1},
	} {
		ix.Expire(c.now)
		got := [3]int{ix.Overlap(0, 0, []uint64{1, 2, 3}), ix.Overlap(1, 0, []uint64{1}), ix.Overlap(0, 0, []uint64{3})}
		if got != [3]int{c.w0, c.w1, c.w3} {
			t.Errorf("at %v s: overlaps %v, want %v", c.now/s, got, [3]int{c.w0, c.w1, c.w3})
		}
	}
	if ix.head != 0 || ix.Len(0, 0) != 1 || ix.Len(1, 0) != 0 {
		t.Fatalf("leftovers: head %d, len %d %d", ix.head, ix.Len(0, 0), ix.Len(1, 0))
	}
	// Freed nodes are reused.
	n := len(ix.nodes)
	ix.Remember(2, 0, []uint64{7, 8}, 2000*s)
	if len(ix.nodes) != n {
		t.Fatalf("nodes grew from %d to %d", n, len(ix.nodes))
	}
	ix.RemoveWorker(2)
	if ix.head != 0 || ix.Overlap(2, 0, []uint64{7}) != 0 {
		t.Fatal("removing a worker kept its remembered blocks")
	}
}

func TestIndexerApplyReportsInconsistentEvents(t *testing.T) {
	for _, c := range []struct {
		name   string
		events []kv.Event
	}{
		{"id gap", []kv.Event{{ID: 1, Kind: kv.Stored, Blocks: []kv.StoredBlock{{BlockHash: 1}}}}},
		{"dangling parent", []kv.Event{{ID: 0, Kind: kv.Stored, Parent: 9, HasParent: true, Blocks: []kv.StoredBlock{{BlockHash: 1}}}}},
		{"stored twice", []kv.Event{
			{ID: 0, Kind: kv.Stored, Blocks: []kv.StoredBlock{{BlockHash: 1}}},
			{ID: 1, Kind: kv.Stored, Blocks: []kv.StoredBlock{{BlockHash: 1}}},
		}},
		{"unknown remove", []kv.Event{{ID: 0, Kind: kv.Removed, Removed: []uint64{5}}}},
		{"negative rank", []kv.Event{{ID: 0, DPRank: -1, Kind: kv.Removed}}},
		{"unknown kind", []kv.Event{{ID: 0}}},
	} {
		if err := NewIndexer(4).Apply(0, c.events); err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
}

// The router's hashes of a prompt equal the BlockHash of the Stored events
// the engines publish for it, for every engine and with DP ranks.
func TestIndexerHashesEqualTheEnginesEventHashes(t *testing.T) {
	for _, c := range []struct {
		name   string
		policy engine.Policy
		bs     int
		prompt int
	}{
		{"vllm block 4", engine.VLLM, 4, 37},
		{"vllm block 16", engine.VLLM, 16, 200},
		{"trtllm block 8", engine.TRTLLM, 8, 64},
		{"sglang page 4", engine.SGLang, 4, 41},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := engine.Config{
				Policy: c.policy, BlockSize: c.bs, NumBlocks: 256, ChunkedPrefill: true,
				PrefixCaching: true, Model: timing.Polynomial{}, Events: true, Seed: 7,
				SGLang: engine.DefaultSGLang(),
			}
			w, err := engine.NewWorker(cfg, 2)
			if err != nil {
				t.Fatal(err)
			}
			prompt := make([]uint32, c.prompt)
			for i := range prompt {
				prompt[i] = uint32(i*7919 + 3)
			}
			// The request runs on rank 1 only.
			if err := w.Ranks[1].Submit(engine.Request{ID: 1, Prompt: prompt, MaxOutput: 3}); err != nil {
				t.Fatal(err)
			}
			ix := NewIndexer(c.bs)
			var stored []uint64
			now := timing.Time(0)
			for i := 0; !w.Empty(); i++ {
				if i == 100 {
					t.Fatal("worker not empty after 100 passes")
				}
				p := w.Step(now)
				for _, ev := range p.Events {
					if ev.DPRank != 1 {
						t.Fatalf("event on rank %d", ev.DPRank)
					}
					for _, b := range ev.Blocks {
						stored = append(stored, b.BlockHash)
					}
				}
				mustApply(t, ix, 0, p.Events...)
				now = max(p.End, now+1)
			}
			want := ix.Hashes(prompt, nil)
			if len(want) != c.prompt/c.bs {
				t.Fatalf("%d hashes for %d tokens", len(want), c.prompt)
			}
			if len(stored) < len(want) || !slices.Equal(stored[:len(want)], want) {
				t.Fatalf("stored %x, want prefix %x", stored, want)
			}
			if got := ix.Overlap(0, 1, want); got != len(want) {
				t.Fatalf("overlap on rank 1: %d, want %d", got, len(want))
			}
			if got := ix.Overlap(0, 0, want); got != 0 {
				t.Fatalf("overlap on rank 0: %d", got)
			}
			// Hashes appends, and a partial block adds nothing.
			if got := ix.Hashes(prompt[:c.bs-1], []uint64{42}); !slices.Equal(got, []uint64{42}) {
				t.Fatalf("partial block hashed: %x", got)
			}
		})
	}
}

// The engine's hashes via kv.Hasher agree with Hashes on any split.
func TestIndexerHashesMatchKVHasher(t *testing.T) {
	prompt := make([]uint32, 50)
	for i := range prompt {
		prompt[i] = uint32(i)
	}
	h := kv.Hasher{BlockSize: 8}
	var want []uint64
	h.Add(prompt, func(_, s uint64) { want = append(want, s) })
	if got := NewIndexer(8).Hashes(prompt, nil); !slices.Equal(got, want) {
		t.Fatalf("hashes %x, want %x", got, want)
	}
}

// refIndex is the reference model: plain maps of stored hashes and
// remembered expiries per (worker, rank).
type refIndex struct {
	ttl    timing.Time
	stored map[[2]int]map[uint64]bool
	expiry map[[2]int]map[uint64]timing.Time
	nextID map[[2]int]uint64
}

func (r *refIndex) present(k [2]int, h uint64) bool {
	return r.stored[k][h] || r.expiry[k][h] != 0
}

func (r *refIndex) overlap(k [2]int, hashes []uint64) int {
	for i, h := range hashes {
		if !r.present(k, h) {
			return i
		}
	}
	return len(hashes)
}

func (r *refIndex) len(k [2]int) int {
	n := len(r.stored[k])
	for h := range r.expiry[k] {
		if !r.stored[k][h] {
			n++
		}
	}
	return n
}

// apply mirrors Indexer.Apply and reports whether the stream was consistent.
func (r *refIndex) apply(worker int, events []kv.Event) (ok bool) {
	ok = true
	for _, ev := range events {
		k := [2]int{worker, ev.DPRank}
		if r.stored[k] == nil {
			r.stored[k] = map[uint64]bool{}
		}
		if ev.ID != r.nextID[k] {
			ok = false
		}
		r.nextID[k] = ev.ID + 1
		switch ev.Kind {
		case kv.Stored:
			if ev.HasParent && !r.stored[k][ev.Parent] {
				ok = false
			}
			for _, b := range ev.Blocks {
				if r.stored[k][b.BlockHash] {
					ok = false
				}
				r.stored[k][b.BlockHash] = true
			}
		case kv.Removed:
			for _, h := range ev.Removed {
				if !r.stored[k][h] {
					ok = false
				}
				delete(r.stored[k], h)
			}
		}
	}
	return ok
}

func (r *refIndex) remember(k [2]int, hashes []uint64, now timing.Time) {
	if r.expiry[k] == nil {
		r.expiry[k] = map[uint64]timing.Time{}
	}
	for _, h := range hashes {
		r.expiry[k][h] = now + r.ttl
	}
}

func (r *refIndex) expire(now timing.Time) {
	for _, m := range r.expiry {
		for h, e := range m {
			if e <= now {
				delete(m, h)
			}
		}
	}
}

func (r *refIndex) removeWorker(worker int) {
	for k := range r.stored {
		if k[0] == worker {
			delete(r.stored, k)
			delete(r.nextID, k)
		}
	}
	for k := range r.expiry {
		if k[0] == worker {
			delete(r.expiry, k)
		}
	}
}

// FuzzIndexer applies random event streams, placements, expiries and
// worker removals, and checks the index against the reference model after
// every step: the overlap of random hash sequences, the sizes, and whether
// Apply reported an inconsistency.
func FuzzIndexer(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add([]byte{0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 5, 5, 5, 6, 6, 6})
	f.Add([]byte("stored removed remembered expired"))
	f.Fuzz(func(t *testing.T, data []byte) {
		const workers, ranks, alphabet = 3, 2, 12
		next := func() int {
			if len(data) == 0 {
				return 0
			}
			b := int(data[0])
			data = data[1:]
			return b
		}
		hashes := func() []uint64 {
			n := next() % 6
			hs := make([]uint64, n)
			for i := range hs {
				hs[i] = uint64(next()%alphabet) + 1
			}
			return hs
		}
		ix := NewIndexer(4)
		ix.TTL = 10
		ref := &refIndex{ttl: 10, stored: map[[2]int]map[uint64]bool{},
			expiry: map[[2]int]map[uint64]timing.Time{}, nextID: map[[2]int]uint64{}}
		now := timing.Time(1) // refIndex uses expiry 0 for "absent"
		for step := 0; len(data) > 0 && step < 500; step++ {
			op, w, rank := next()%8, next()%workers, next()%ranks
			k := [2]int{w, rank}
			switch op {
			case 0, 1, 2: // a pass's events on worker w, mostly valid ids
				var evs []kv.Event
				ids := map[int]uint64{} // next id per rank in this pass
				for range next()%3 + 1 {
					r := next() % ranks
					id, seen := ids[r]
					if !seen {
						id = ref.nextID[[2]int{w, r}]
					}
					if next()%16 == 0 {
						id++ // an occasional gap
					}
					ids[r] = id + 1
					ev := kv.Event{ID: id, DPRank: r}
					if next()%2 == 0 {
						ev.Kind = kv.Stored
						if p := next() % (alphabet + 1); p != 0 {
							ev.Parent, ev.HasParent = uint64(p), true
						}
						for _, h := range hashes() {
							ev.Blocks = append(ev.Blocks, kv.StoredBlock{BlockHash: h})
						}
					} else {
						ev.Kind, ev.Removed = kv.Removed, hashes()
					}
					evs = append(evs, ev)
				}
				refOK := ref.apply(w, evs)
				if err := ix.Apply(w, evs); (err == nil) != refOK {
					t.Fatalf("step %d: Apply error %v, reference consistent %v", step, err, refOK)
				}
			case 3, 4:
				hs := hashes()
				ref.remember(k, hs, now)
				ix.Remember(w, rank, hs, now)
			case 5:
				now += timing.Time(next() % 8)
				ref.expire(now)
				ix.Expire(now)
			case 6:
				if next()%4 == 0 {
					ref.removeWorker(w)
					ix.RemoveWorker(w)
				}
			}
			for w := range workers {
				for r := range ranks {
					k := [2]int{w, r}
					if got, want := ix.Len(w, r), ref.len(k); got != want {
						t.Fatalf("step %d: worker %d rank %d: len %d, want %d", step, w, r, got, want)
					}
					hs := hashes()
					if got, want := ix.Overlap(w, r, hs), ref.overlap(k, hs); got != want {
						t.Fatalf("step %d: worker %d rank %d: overlap %v = %d, want %d", step, w, r, hs, got, want)
					}
				}
			}
		}
	})
}

func BenchmarkIndexerOverlap(b *testing.B) {
	var l evlog
	ix := NewIndexer(16)
	prompt := make([]uint32, 16*256)
	for i := range prompt {
		prompt[i] = uint32(i)
	}
	hs := ix.Hashes(prompt, nil)
	if err := ix.Apply(0, []kv.Event{l.stored(0, 0, hs[:200]...)}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if ix.Overlap(0, 0, hs) != 200 {
			b.Fatal("overlap")
		}
	}
}

// BenchmarkIndexerApply stores and removes 16 blocks per op.
func BenchmarkIndexerApply(b *testing.B) {
	var l evlog
	ix := NewIndexer(16)
	hs := make([]uint64, 16)
	for i := range hs {
		hs[i] = uint64(i)*0x9E3779B97F4A7C15 + 1
	}
	evs := []kv.Event{l.stored(0, 0, hs...), l.removed(0, hs...)}
	b.ReportAllocs()
	for id := uint64(0); b.Loop(); id += 2 {
		evs[0].ID, evs[1].ID = id, id+1
		if err := ix.Apply(0, evs); err != nil {
			b.Fatal(err)
		}
	}
}
