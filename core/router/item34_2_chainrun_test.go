package router

import (
	"testing"
	"unsafe"

	"github.com/dynosim/dynosim-web/kv"
)

// checkRuns checks a chain index's invariants between events (issue 34
// item 2, R7): every run owns its array (split copies a part out or caps
// the head; append and trim work in place, so two runs sharing array
// slots would overwrite each other), heads and tails name every run by
// its ends, headN counts the heads by bucket, and n is the runs' length.
func checkRuns(tb testing.TB, c *chainSet) {
	tb.Helper()
	if c.open >= 0 {
		tb.Fatalf("run %d left open", c.open)
	}
	type span struct{ lo, hi uintptr }
	var spans []span
	var n, heads int
	var buckets [512]int32
	for r, run := range c.runs {
		if run == nil {
			continue
		}
		if len(run) == 0 {
			tb.Fatalf("run %d empty", r)
		}
		lo := uintptr(unsafe.Pointer(unsafe.SliceData(run)))
		s := span{lo, lo + uintptr(cap(run))*8}
		for _, o := range spans {
			if s.lo < o.hi && o.lo < s.hi {
				tb.Fatalf("run %d shares its array with another run", r)
			}
		}
		spans = append(spans, s)
		if x, ok := c.heads.Get(run[0]); !ok || x != int32(r) {
			tb.Fatalf("run %d: heads has %d, %v", r, x, ok)
		}
		if x, ok := c.tails.Get(run[len(run)-1]); !ok || x != int32(r) {
			tb.Fatalf("run %d: tails has %d, %v", r, x, ok)
		}
		n += len(run)
		heads++
		buckets[run[0]>>55]++
	}
	if n != c.n || heads != c.heads.Len() || heads != c.tails.Len() || buckets != c.headN {
		tb.Fatalf("n %d (runs %d), heads %d tails %d (runs %d), head filter off: %v", c.n, n, c.heads.Len(), c.tails.Len(), heads, buckets != c.headN)
	}
}

// TestItem34_2ChainRuns: the chain index's batched appends and trims and
// its split (a short tail copied out, the head keeping the array; a long
// tail keeping the array's rest, the head capped) keep the invariants of
// checkRuns and answer as the set does, on streams built to hit each path.
func TestItem34_2ChainRuns(t *testing.T) {
	var tr chainTree
	line := func(parent, n int, local uint64) []int { // n nodes below parent
		var nodes []int
		for range n {
			parent = tr.node(parent, local)
			nodes = append(nodes, parent)
		}
		return nodes
	}
	long := line(-1, 12, 1)             // a run of 12
	early := line(long[1], 3, 2)        // branches after 2 blocks: the tail (10) is longer
	late := line(long[9], 4, 3)         // branches after 10 blocks: the tail (2) is shorter
	lateMore := line(late[3], 6, 1)     // appended to the branch later
	headMid := line(early[2], 2, 1)     // then ...
	after := line(long[11], 5, 2)       // extends the long run's end
	rev := func(nodes []int) []uint64 { // removal order: leaf back
		var hs []uint64
		for i := len(nodes) - 1; i >= 0; i-- {
			hs = append(hs, tr.hash[nodes[i]])
		}
		return hs
	}
	cases := []struct {
		name  string
		steps func(l *evlog) []kv.Event
	}{
		{"late branch copies the short tail, head appends in place", func(l *evlog) []kv.Event {
			return []kv.Event{tr.stored(l, 0, long, false), tr.stored(l, 0, late, false), tr.stored(l, 0, after, false), tr.stored(l, 0, lateMore, false)}
		}},
		{"early branch caps the head", func(l *evlog) []kv.Event {
			return []kv.Event{tr.stored(l, 0, long, false), tr.stored(l, 0, early, false), tr.stored(l, 0, headMid, false), tr.stored(l, 0, after, false)}
		}},
		{"placement cuts, both parts grow", func(l *evlog) []kv.Event {
			return []kv.Event{tr.stored(l, 0, long, false), {}, tr.stored(l, 0, late, false), tr.stored(l, 0, after, false)}
		}},
		{"a batch stops at a stored head", func(l *evlog) []kv.Event {
			// the middle block removed, then stored again with the
			// blocks after it, which head the run the removal split off
			return []kv.Event{tr.stored(l, 0, long, false), l.removed(0, tr.hash[long[4]]), tr.stored(l, 0, long[4:8], false)}
		}},
		{"trim runs through a run, then finds the next", func(l *evlog) []kv.Event {
			return []kv.Event{tr.stored(l, 0, long, false), tr.stored(l, 0, late, false), tr.stored(l, 0, early, false),
				l.removed(0, append(rev(late), rev(long[2:])...)...), l.removed(0, append(rev(early), rev(long[:2])...)...)}
		}},
		{"trim stops at a run's last block", func(l *evlog) []kv.Event {
			return []kv.Event{tr.stored(l, 0, long[:3], false), tr.stored(l, 0, line(-1, 2, 2), false),
				l.removed(0, tr.hash[long[2]], tr.hash[long[1]], tr.hash[long[0]]), l.removed(0, tr.hash[long[0]])}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			chain, set := NewIndexer(4), NewIndexer(4)
			chain.chains = true
			var lc, ls evlog
			evsC, evsS := tc.steps(&lc), tc.steps(&ls)
			for i, evc := range evsC {
				if evc.Kind == 0 { // a placement of the long line with 10 blocks cached
					p := tr.path(long[11])
					chain.Placed(0, 0, p, 10)
					continue
				}
				errC, errS := chain.Apply(0, []kv.Event{evc}), set.Apply(0, []kv.Event{evsS[i]})
				if (errC == nil) != (errS == nil) {
					t.Fatalf("event %d: chain Apply %v, set Apply %v", i, errC, errS)
				}
				rs := chain.set(0, 0)
				if rs.c == nil {
					t.Fatalf("event %d: fell back to the set", i)
				}
				checkRuns(t, rs.c)
				for j := range tr.hash {
					if got, want := chain.Overlap(0, 0, tr.path(j)), set.Overlap(0, 0, tr.path(j)); got != want {
						t.Fatalf("event %d: overlap of node %d: %d, set %d", i, j, got, want)
					}
				}
				if got, want := chain.Len(0, 0), set.Len(0, 0); got != want {
					t.Fatalf("event %d: len %d, set %d", i, got, want)
				}
			}
		})
	}
}
