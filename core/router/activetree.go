package router

import "github.com/dynosim/dynosim-web/internal/idmap"

// activeTree is the prompt blocks the KV router's active sequences hold on
// one (worker, rank), for the cost function's two questions (spec §8.6):
// how long a leading run of a request's block hashes is held there, and
// how many distinct blocks are held. Block hashes chain their prefix, so
// the held blocks form a trie; activeTree stores it path-compressed (a
// radix tree, Morrison's PATRICIA): a segment is a run of chained hashes
// that every sequence through its first block also holds to its last, with
// one count for the run. Placing or finishing a sequence then costs a hash
// lookup per segment on its path and a sequential compare per block,
// instead of a random probe per block into a table of every held block
// (issue 34 item 2: 40-50 k held blocks per rank at 5× load, a cache miss
// per probe; the counts per block were the replay's largest router cost).
//
// It relies on what the engines' prefix caches rely on: a chained hash
// names its whole prefix, so a hash found anywhere in the tree is found at
// the end of the same path (64-bit collisions aside).
//
// A sequence is released by its leaf, the last segment on its path (hold
// returns it): each segment links its parent, and a split keeps the tail
// under the old index, so a leaf stays the same segment, ending where the
// sequence ends, for as long as the sequence is held. The router then
// keeps no copy of a sequence's hashes and release looks nothing up (issue
// 34 item 2, R6: the copy and release's lookups were 0.2 s of 8 replays).
type activeTree struct {
	first idmap.Map // a segment's first hash → its index
	segs  []segment
	free  []int32 // unused segment indices
	pool  runPool // dropped segments' buffers, for new runs
	held  int     // distinct blocks held
	epoch uint64  // set by the Indexer at the first hold: tells a leaf from a removed tree's
}

type segment struct {
	hashes []uint64 // chained hashes, each the next one's parent
	count  int32    // sequences holding the whole run; 0: unused
	parent int32    // the segment before it on every path through it; -1: none
}

// seg is the segment that starts with hash h, or -1.
func (t *activeTree) seg(h uint64) int32 {
	if s, ok := t.first.Get(h); ok {
		return s
	}
	return -1
}

// prefix is the number of leading hashes held.
func (t *activeTree) prefix(hashes []uint64) int {
	i := 0
	for i < len(hashes) {
		s := t.seg(hashes[i])
		if s < 0 {
			return i
		}
		run := t.segs[s].hashes
		j := 1
		for i++; j < len(run) && i < len(hashes) && run[j] == hashes[i]; i, j = i+1, j+1 {
		}
		if j < len(run) {
			return i
		}
	}
	return i
}

// hold adds a sequence with hashes: the segments on its path count it,
// one that it leaves midway is split there, and its blocks beyond the
// held prefix become a new segment (a copy: hashes stays the caller's).
// It returns the sequence's leaf, for release; -1 for no hashes.
func (t *activeTree) hold(hashes []uint64) int32 {
	i, leaf := 0, int32(-1)
	for i < len(hashes) {
		s := t.seg(hashes[i])
		if s < 0 {
			break
		}
		run := t.segs[s].hashes
		j := 1
		for i++; j < len(run) && i < len(hashes) && run[j] == hashes[i]; i, j = i+1, j+1 {
		}
		if j < len(run) {
			s = t.split(s, j)
		}
		t.segs[s].count++
		leaf = s
		if j < len(run) {
			break // the sequence ends or diverges inside the run
		}
	}
	if i < len(hashes) {
		leaf = t.add(t.pool.copy(hashes[i:]), 1, leaf)
		t.held += len(hashes) - i
	}
	return leaf
}

// release removes the sequence hold returned leaf for: its path ends on a
// segment boundary (hold split there, and segments are only ever split),
// so each segment from its leaf up loses one count and is dropped at 0,
// its blocks with it (a segment's count is at least its children's, so a
// dropped one has no children left).
func (t *activeTree) release(leaf int32) {
	for s := leaf; s >= 0; {
		sg := &t.segs[s]
		next := sg.parent
		if sg.count--; sg.count == 0 {
			t.first.Delete(sg.hashes[0])
			t.held -= len(sg.hashes)
			t.pool.put(sg.hashes) // its own: split caps heads, a tail owns the array's rest
			sg.hashes = nil
			t.free = append(t.free, s)
		}
		s = next
	}
}

// split cuts segment s before its j-th hash and returns the head, a new
// segment; the tail keeps s's index (the leaf of the sequences that end
// there, the parent of its children) and both keep the count.
func (t *activeTree) split(s int32, j int) int32 {
	run := t.segs[s].hashes
	h := t.add(run[:j:j], t.segs[s].count, t.segs[s].parent)
	t.segs[s].hashes, t.segs[s].parent = run[j:], h
	t.first.Put(run[j], s)
	return h
}

// add makes a segment of run with count under parent and returns it.
func (t *activeTree) add(run []uint64, count, parent int32) int32 {
	var s int32
	if n := len(t.free); n > 0 {
		s, t.free = t.free[n-1], t.free[:n-1]
		t.segs[s] = segment{run, count, parent}
	} else {
		s = int32(len(t.segs))
		t.segs = append(t.segs, segment{run, count, parent})
	}
	t.first.Put(run[0], s)
	return s
}
