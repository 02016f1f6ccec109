package router

import (
	"testing"

	"github.com/dynosim/dynosim-web/kv"
)

// chainTree is a universe of chained block hashes for the chain index's
// tests: node i has a local (tokens) hash from a small alphabet and a
// parent (-1: a root), and its sequence hash chains as the engines' do.
type chainTree struct {
	hash, local []uint64
	parent      []int
	paths       [][]uint64 // from a root to each node
}

// node returns the child of parent (-1: a root) with local hash local,
// adding it if new.
func (t *chainTree) node(parent int, local uint64) int {
	h := local
	if parent >= 0 {
		h = kv.ChainHash(t.hash[parent], local)
	}
	for i, x := range t.hash {
		if x == h {
			return i
		}
	}
	var p []uint64
	if parent >= 0 {
		p = t.paths[parent]
	}
	t.hash, t.local, t.parent = append(t.hash, h), append(t.local, local), append(t.parent, parent)
	t.paths = append(t.paths, append(p[:len(p):len(p)], h))
	return len(t.hash) - 1
}

// path is the chain of hashes from a root to node i.
func (t *chainTree) path(i int) []uint64 { return t.paths[i] }

// stored is a Stored event of the nodes path (each the next one's parent),
// chained unless broken.
func (t *chainTree) stored(l *evlog, rank int, nodes []int, broken bool) kv.Event {
	ev := kv.Event{ID: l.id(rank), DPRank: rank, Kind: kv.Stored}
	if p := t.parent[nodes[0]]; p >= 0 {
		ev.Parent, ev.HasParent = t.hash[p], true
	}
	for _, n := range nodes {
		ev.Blocks = append(ev.Blocks, kv.StoredBlock{BlockHash: t.hash[n], TokensHash: t.local[n]})
	}
	if broken {
		ev.Blocks[len(ev.Blocks)-1].TokensHash++
	}
	return ev
}

// runChainOps drives a chain index (as the KV router has it with KV
// events) and a set index (the reference) with the same stream, drawn
// from data over a small tree of chained hashes: Stored events that extend
// a path (sometimes over blocks already stored, from a parent not stored,
// or not chaining), Removed events of stored or absent hashes (from a
// path's leaf back, or anywhere), placements, remembered hashes, and a
// tiny scan budget on some ranks. After every step both must agree on
// Apply's consistency, Len and the overlap of every path of the tree.
func runChainOps(tb testing.TB, data []byte) {
	const ranks = 3
	next := func() int {
		if len(data) == 0 {
			return 0
		}
		b := int(data[0])
		data = data[1:]
		return b
	}
	var t chainTree
	chain, set := NewIndexer(4), NewIndexer(4)
	chain.chains = true
	var lc, ls evlog
	for step := 0; len(data) > 0 && step < 300; step++ {
		op, rank := next()%8, next()%ranks
		var evc, evs kv.Event
		switch op {
		case 0, 1, 2, 3: // store a path of 1-5 blocks below a node
			parent := -1
			if len(t.hash) > 0 && next()%4 != 0 {
				parent = next() % len(t.hash)
			}
			var nodes []int
			for range next()%5 + 1 {
				if len(t.hash) >= 150 && parent >= 0 && len(t.paths[parent]) >= 40 {
					break // keeps a step's checks (every path, every rank) small
				}
				parent = t.node(parent, uint64(next()%3)+1)
				nodes = append(nodes, parent)
			}
			if len(nodes) == 0 {
				continue
			}
			broken := next()%32 == 0
			evc, evs = t.stored(&lc, rank, nodes, broken), t.stored(&ls, rank, nodes, broken)
		case 4, 5: // remove a path's blocks from its leaf back
			if len(t.hash) == 0 {
				continue
			}
			p := t.path(next() % len(t.hash))
			k := next()%len(p) + 1
			var hs []uint64
			for i := len(p) - 1; i >= len(p)-k; i-- {
				hs = append(hs, p[i])
			}
			evc, evs = lc.removed(rank, hs...), ls.removed(rank, hs...)
		case 6: // remove any blocks
			var hs []uint64
			for range next()%3 + 1 {
				if len(t.hash) > 0 {
					hs = append(hs, t.hash[next()%len(t.hash)])
				}
			}
			evc, evs = lc.removed(rank, hs...), ls.removed(rank, hs...)
		case 7:
			switch x := next() % 8; {
			case x == 0 && len(t.hash) > 0: // the approximate mode's hashes
				p := t.path(next() % len(t.hash))
				chain.Remember(0, rank, p, 1)
				set.Remember(0, rank, p, 1)
			case x == 1: // scans over budget
				if rs := chain.set(0, rank); rs != nil && rs.c != nil {
					rs.c.budget = rs.c.scanned
				}
			case len(t.hash) > 0: // a placement cuts the run it hit
				p := t.path(next() % len(t.hash))
				chain.Placed(0, rank, p, chain.Overlap(0, rank, p))
			}
			evc.Kind = 0
		}
		if evc.Kind != 0 {
			errC, errS := chain.Apply(0, []kv.Event{evc}), set.Apply(0, []kv.Event{evs})
			if (errC == nil) != (errS == nil) {
				tb.Fatalf("step %d: chain Apply %v, set Apply %v", step, errC, errS)
			}
		}
		for r := range ranks {
			if rs := chain.set(0, r); rs != nil && rs.c != nil {
				checkRuns(tb, rs.c)
			}
			if got, want := chain.Len(0, r), set.Len(0, r); got != want {
				tb.Fatalf("step %d rank %d: len %d, set %d", step, r, got, want)
			}
			for i := range t.hash {
				p := t.path(i)
				if got, want := chain.Overlap(0, r, p), set.Overlap(0, r, p); got != want {
					tb.Fatalf("step %d rank %d: overlap of node %d %d, set %d", step, r, i, got, want)
				}
			}
		}
	}
}

// FuzzItem34_2ChainIndex checks the chain index against the set on random
// streams of chained blocks (runChainOps).
func FuzzItem34_2ChainIndex(f *testing.F) {
	f.Add([]byte{0, 0, 4, 0, 1, 2, 0, 1, 0, 0, 5, 2, 3, 4, 5})
	f.Add([]byte("stored removed branched placed remembered"))
	f.Add([]byte{1, 1, 9, 4, 2, 2, 1, 1, 2, 0, 0, 3, 1, 1, 4, 0, 1, 2, 2, 4, 1, 1, 3, 5, 0, 7, 2, 2})
	f.Fuzz(func(t *testing.T, data []byte) { runChainOps(t, data) })
}

// TestItem34_2ChainIndex runs fixed streams through runChainOps and
// table cases through both indexes.
func TestItem34_2ChainIndex(t *testing.T) {
	for seed := range 200 {
		data := make([]byte, 600)
		x := uint64(seed)*0x9E3779B97F4A7C15 + 1
		for i := range data {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			data[i] = byte(x)
		}
		runChainOps(t, data)
	}
	var tr chainTree
	a := tr.node(-1, 1)
	b := tr.node(a, 1)
	c := tr.node(b, 2)
	d := tr.node(c, 1)
	e := tr.node(b, 3) // branches off b
	f := tr.node(e, 1)
	cases := []struct {
		name  string
		steps func(l *evlog) []kv.Event
	}{
		{"append in pieces", func(l *evlog) []kv.Event {
			return []kv.Event{tr.stored(l, 0, []int{a, b}, false), tr.stored(l, 0, []int{c, d}, false)}
		}},
		{"branch off the middle", func(l *evlog) []kv.Event {
			return []kv.Event{tr.stored(l, 0, []int{a, b, c, d}, false), tr.stored(l, 0, []int{e, f}, false)}
		}},
		{"evict leaf first", func(l *evlog) []kv.Event {
			return []kv.Event{tr.stored(l, 0, []int{a, b, c, d}, false), l.removed(0, tr.hash[d], tr.hash[c])}
		}},
		{"evict the head", func(l *evlog) []kv.Event {
			return []kv.Event{tr.stored(l, 0, []int{a, b, c}, false), l.removed(0, tr.hash[a])}
		}},
		{"evict the middle, store it again", func(l *evlog) []kv.Event {
			return []kv.Event{tr.stored(l, 0, []int{a, b, c, d}, false), l.removed(0, tr.hash[b]), tr.stored(l, 0, []int{b}, false)}
		}},
		{"stored twice", func(l *evlog) []kv.Event {
			return []kv.Event{tr.stored(l, 0, []int{a, b, c}, false), tr.stored(l, 0, []int{b, c, d}, false)}
		}},
		{"parent not stored", func(l *evlog) []kv.Event {
			return []kv.Event{tr.stored(l, 0, []int{c, d}, false)}
		}},
		{"removed not stored", func(l *evlog) []kv.Event {
			return []kv.Event{tr.stored(l, 0, []int{a}, false), l.removed(0, tr.hash[a], tr.hash[b])}
		}},
		{"not chained", func(l *evlog) []kv.Event {
			return []kv.Event{tr.stored(l, 0, []int{a, b}, false), tr.stored(l, 0, []int{e, f}, true)}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			chain, set := NewIndexer(4), NewIndexer(4)
			chain.chains = true
			var lc, ls evlog
			evsC, evsS := tc.steps(&lc), tc.steps(&ls)
			for i, evc := range evsC {
				evs := evsS[i]
				errC, errS := chain.Apply(0, []kv.Event{evc}), set.Apply(0, []kv.Event{evs})
				if (errC == nil) != (errS == nil) {
					t.Fatalf("event %d: chain Apply %v, set Apply %v", i, errC, errS)
				}
			}
			if got, want := chain.Len(0, 0), set.Len(0, 0); got != want {
				t.Fatalf("len %d, set %d", got, want)
			}
			for i := range tr.hash {
				if got, want := chain.Overlap(0, 0, tr.path(i)), set.Overlap(0, 0, tr.path(i)); got != want {
					t.Fatalf("overlap of node %d: %d, set %d", i, got, want)
				}
			}
		})
	}
}

// TestItem34_2ChainFallback: a rank leaves chains for the set, for good,
// at an event that does not chain, at a remembered hash and when its scans
// outrun their budget, and answers as the set does after.
func TestItem34_2ChainFallback(t *testing.T) {
	var tr chainTree
	a := tr.node(-1, 1)
	b := tr.node(a, 1)
	c := tr.node(b, 2)
	d := tr.node(c, 1)
	e := tr.node(b, 3)
	ev := tr.stored(&evlog{}, 0, []int{a, b}, false)
	for _, tc := range []struct {
		name    string
		mutate  func(*kv.Event)
		chained bool
	}{
		{"chained", func(*kv.Event) {}, true},
		{"tokens hash", func(ev *kv.Event) { ev.Blocks[1].TokensHash++ }, false},
		{"root with a parent", func(ev *kv.Event) { ev.Parent, ev.HasParent = 7, true }, false},
		{"child without its parent's chain", func(ev *kv.Event) { ev.Blocks[1].BlockHash = tr.hash[e] }, false},
	} {
		x := ev
		x.Blocks = append([]kv.StoredBlock(nil), ev.Blocks...)
		tc.mutate(&x)
		if got := chained(&x); got != tc.chained {
			t.Errorf("%s: chained %v, want %v", tc.name, got, tc.chained)
		}
	}
	for _, tc := range []struct {
		name string
		do   func(ix *Indexer, l *evlog) error
	}{
		{"not chained", func(ix *Indexer, l *evlog) error {
			return ix.Apply(0, []kv.Event{tr.stored(l, 0, []int{e}, true)})
		}},
		{"remembered", func(ix *Indexer, l *evlog) error {
			ix.Remember(0, 0, tr.path(e), 1)
			return nil
		}},
		{"scans over budget", func(ix *Indexer, l *evlog) error {
			if c := ix.set(0, 0).c; c != nil {
				c.budget = -1 << 20
			}
			return ix.Apply(0, []kv.Event{tr.stored(l, 0, []int{e}, false)}) // e's parent b is mid-run
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			chain, set := NewIndexer(4), NewIndexer(4)
			chain.chains = true
			var lc, ls evlog
			mustApply(t, chain, 0, tr.stored(&lc, 0, []int{a, b, c, d}, false))
			mustApply(t, set, 0, tr.stored(&ls, 0, []int{a, b, c, d}, false))
			if chain.set(0, 0).c == nil {
				t.Fatal("no chains before")
			}
			errC, errS := tc.do(chain, &lc), tc.do(set, &ls)
			if (errC == nil) != (errS == nil) {
				t.Fatalf("chain %v, set %v", errC, errS)
			}
			if chain.set(0, 0).c != nil || !chain.set(0, 0).plain {
				t.Fatal("still chains")
			}
			mustApply(t, chain, 0, lc.removed(0, tr.hash[d]))
			mustApply(t, set, 0, ls.removed(0, tr.hash[d]))
			for i := range tr.hash {
				if got, want := chain.Overlap(0, 0, tr.path(i)), set.Overlap(0, 0, tr.path(i)); got != want {
					t.Fatalf("overlap of node %d: %d, set %d", i, got, want)
				}
			}
			if got, want := chain.Len(0, 0), set.Len(0, 0); got != want {
				t.Fatalf("len %d, set %d", got, want)
			}
		})
	}
}
