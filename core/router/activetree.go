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
type activeTree struct {
	first idmap.Map // a segment's first hash → its index
	segs  []segment
	free  []int32 // unused segment indices
	pool  runPool // dropped segments' buffers, for new runs
	held  int     // distinct blocks held
}

type segment struct {
	hashes []uint64 // chained hashes, each the next one's parent
	count  int32    // sequences holding the whole run; 0: unused
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
// held prefix become a new segment.
func (t *activeTree) hold(hashes []uint64) {
	i := 0
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
			t.split(s, j)
		}
		t.segs[s].count++
		if j < len(run) {
			break // the sequence ends or diverges inside the run
		}
	}
	if i < len(hashes) {
		t.add(t.pool.copy(hashes[i:]), 1)
		t.held += len(hashes) - i
	}
}

// release removes a sequence hold added: its path ends on a segment
// boundary (hold split there, and segments are only ever split), so each
// segment on it loses one count and is dropped at 0, its blocks with it.
// Hashes not held (after the worker was removed) are ignored.
func (t *activeTree) release(hashes []uint64) {
	for i := 0; i < len(hashes); {
		s := t.seg(hashes[i])
		if s < 0 {
			return
		}
		sg := &t.segs[s]
		n := len(sg.hashes)
		if sg.count--; sg.count == 0 {
			t.first.Delete(hashes[i])
			t.held -= n
			t.pool.put(sg.hashes) // its own: split caps heads, a tail owns the array's rest
			sg.hashes = nil
			t.free = append(t.free, s)
		}
		i += n
	}
}

// split cuts segment s before its j-th hash; the tail, a new segment,
// keeps the count.
func (t *activeTree) split(s int32, j int) {
	run := t.segs[s].hashes
	t.segs[s].hashes = run[:j:j]
	t.add(run[j:], t.segs[s].count)
}

// add makes a segment of run with count.
func (t *activeTree) add(run []uint64, count int32) {
	var s int32
	if n := len(t.free); n > 0 {
		s, t.free = t.free[n-1], t.free[:n-1]
		t.segs[s] = segment{run, count}
	} else {
		s = int32(len(t.segs))
		t.segs = append(t.segs, segment{run, count})
	}
	t.first.Put(run[0], s)
}
