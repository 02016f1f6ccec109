package router

import (
	"github.com/dynosim/dynosim-web/internal/idmap"
	"github.com/dynosim/dynosim-web/kv"
)

// chainSet is the hashes one (worker, rank)'s KV events stored, kept as
// chains instead of one table slot per block (issue 34 item 2). A Stored
// event's blocks are a chain, each block's sequence hash the chained hash
// of its parent's and its own tokens' (kv.ChainHash), and an engine evicts
// a sequence's blocks from its leaf back: so the stored hashes form runs,
// each block the next one's parent, that grow and shrink at their ends.
// chainSet keeps each run's hashes in order and indexes only the ends
// (heads and tails: ~40 runs per rank on average at the benchmark, where
// the per-block set held up to 7,004 blocks a worker at random slots,
// 128 KiB each). A Stored
// event's blocks then cost a sequential append, a Removed event's one
// small-table lookup and a trim each, instead of a cache miss per block
// in a table as large as the worker's cache.
//
// It is exact for the streams it accepts: every Stored block must chain
// (BlockHash == ChainHash(parent, TokensHash), or == TokensHash for a
// block without a parent), which Apply checks, falling back to the
// per-block set for the rank (unchain) at the first block that does not.
// Then a hash names its parent, as the engines' prefix caches and the
// active tree (activetree.go) rely on (64-bit collisions aside), so a
// stored hash whose parent is stored sits right after it in its run or
// heads a run, and a lookup along a chain of hashes (prefix) needs only
// the heads. A hash looked up by itself (a Stored event's parent, a
// removed hash) is found by its run's ends, else by a scan of the runs:
// a removal from a run's middle, or a branch off a run's middle that
// placement did not cut first (Indexer.Placed), mostly a request whose
// engine matched less than the router saw, its cached prefix partly
// evicted while it waited, and another request's blocks appended there
// since (8.4 k of the benchmark's 90 k Stored events). A scan costs the
// blocks on the rank, so the rank falls back to the set once its scans
// have read more than scanFactor slots per block stored or removed.
type chainSet struct {
	runs  [][]uint64 // chains of stored hashes; nil: unused
	free  []int32    // unused run indices
	heads idmap.Map  // a run's first hash → its index
	headN [512]int32 // heads by their top 9 bits: most absent keys need no probe
	tails idmap.Map  // a run's last hash → its index
	n     int        // hashes stored
	pool  runPool    // dropped runs' buffers

	scanned, budget int // slots scans read; scanFactor per block applied, plus a start

	// A run whose tail moves block by block within one event (appended
	// to, or evicted from its leaf back) updates tails once, at flush:
	// open is that run (-1: none) and openKey its hash in tails.
	open    int32
	openKey uint64
}

// scanFactor bounds what scans cost per block applied: 16 slots read in
// order, about one cache miss, the price of a block in the set.
const scanFactor = 16

func newChainSet() *chainSet { return &chainSet{open: -1, budget: 1 << 16} }

// flush brings the open run's tails entry up to date.
func (c *chainSet) flush() {
	if c.open < 0 {
		return
	}
	run := c.runs[c.open]
	if last := run[len(run)-1]; last != c.openKey {
		c.tails.Delete(c.openKey)
		c.tails.Put(last, c.open)
	}
	c.open = -1
}

// chained reports whether every block of the Stored event ev chains from
// its parent: the condition under which chainSet is exact.
func chained(ev *kv.Event) bool {
	p, has := ev.Parent, ev.HasParent
	for _, b := range ev.Blocks {
		want := b.TokensHash
		if has {
			want = kv.ChainHash(p, b.TokensHash)
		}
		if b.BlockHash != want {
			return false
		}
		p, has = b.BlockHash, true
	}
	return true
}

// find returns the run holding h and h's position in it.
func (c *chainSet) find(h uint64) (r int32, j int, ok bool) {
	if r, ok := c.tails.Get(h); ok {
		return r, len(c.runs[r]) - 1, true
	}
	if r, ok := c.head(h); ok {
		return r, 0, true
	}
	for r, run := range c.runs {
		c.scanned += len(run)
		for j, x := range run {
			if x == h {
				return int32(r), j, true
			}
		}
	}
	return -1, 0, false
}

// prefix is the number of leading hashes stored; hashes must be a chain
// (Indexer.Hashes): each one after the first is found right after its
// predecessor in a run, or as a run's head.
func (c *chainSet) prefix(hashes []uint64) int {
	var run []uint64
	j := 0
	for i, h := range hashes {
		if j+1 < len(run) && run[j+1] == h {
			j++
			continue
		}
		r, ok := c.head(h)
		if !ok {
			return i
		}
		run, j = c.runs[r], 0
	}
	return len(hashes)
}

// head returns the run h heads. A new block of a Stored event asks it
// (stored already?), so most keys asked are absent: headN answers most of
// them without a probe (~40 heads on a rank at the benchmark).
func (c *chainSet) head(h uint64) (int32, bool) {
	if c.headN[h>>55] == 0 {
		return 0, false
	}
	return c.heads.Get(h)
}

func (c *chainSet) putHead(h uint64, r int32) {
	if _, ok := c.heads.Get(h); !ok {
		c.headN[h>>55]++
	}
	c.heads.Put(h, r)
}

func (c *chainSet) deleteHead(h uint64) {
	if _, ok := c.heads.Get(h); ok {
		c.headN[h>>55]--
		c.heads.Delete(h)
	}
}

// newRun makes a run of hashes (not empty) and returns its index.
func (c *chainSet) newRun(hashes []uint64) int32 {
	var r int32
	if n := len(c.free); n > 0 {
		r, c.free = c.free[n-1], c.free[:n-1]
		c.runs[r] = hashes
	} else {
		r = int32(len(c.runs))
		c.runs = append(c.runs, hashes)
	}
	c.putHead(hashes[0], r)
	c.tails.Put(hashes[len(hashes)-1], r)
	return r
}

// split cuts run r before its j-th hash (0 < j < len): the tail becomes a
// new run. Each part must own its array (pushRun appends in place): the
// shorter tail is copied out and the head keeps the array and its room,
// for a head is appended to next (a branch off the run's middle, the
// blocks after a placed request's cached prefix: Indexer.Placed); a
// longer tail keeps the array's rest and the head is capped, copied at
// its next append. Either way a split costs at most the shorter part's
// copy (issue 34 item 2, R7: capping every head copied the whole head at
// its next append, 0.2 s of 40 replays' Apply).
func (c *chainSet) split(r int32, j int) {
	c.flush()
	run := c.runs[r]
	if len(run)-j <= j {
		c.runs[r] = run[:j]
		c.newRun(c.pool.copy(run[j:]))
	} else {
		c.runs[r] = run[:j:j]
		c.newRun(run[j:])
	}
	c.tails.Put(run[j-1], r)
}

// pushRun appends the blocks' hashes to run r, whose last hash is parent,
// the first block's parent (passed in: the run's end is usually not in
// the cache), growing it once for all of them.
func (c *chainSet) pushRun(r int32, parent uint64, blocks []kv.StoredBlock) {
	if c.open != r {
		c.flush()
		c.open, c.openKey = r, parent
	}
	run := c.runs[r]
	if n := len(run) + len(blocks); n > cap(run) {
		grown := append(c.pool.get(max(2*len(run), n)), run...)
		c.pool.put(run) // its own (split)
		run = grown
	}
	for _, b := range blocks {
		run = append(run, b.BlockHash)
	}
	c.runs[r] = run
}

// isHead reports whether h heads a run (head, without the run).
func (c *chainSet) isHead(h uint64) bool {
	if c.headN[h>>55] == 0 {
		return false
	}
	_, ok := c.heads.Get(h)
	return ok
}

// store applies a Stored event's blocks (chained(ev) holds) and reports
// whether the parent was stored and the first block stored already, if any.
func (c *chainSet) store(ev *kv.Event) (parentOK bool, twice uint64, dup bool) {
	r, j := int32(-1), 0 // where the next block's parent is
	parent := ev.Parent
	parentOK = true
	if ev.HasParent {
		var ok bool
		if r, j, ok = c.find(ev.Parent); !ok {
			r, parentOK = -1, false
		}
	}
	c.budget += scanFactor * len(ev.Blocks)
	for i := 0; i < len(ev.Blocks); i++ {
		h := ev.Blocks[i].BlockHash
		if r >= 0 && j+1 < len(c.runs[r]) && c.runs[r][j+1] == h {
			twice, dup = first(twice, dup, h), true
			j, parent = j+1, h
			continue
		}
		if s, ok := c.head(h); ok {
			twice, dup = first(twice, dup, h), true
			r, j, parent = s, 0, h
			continue
		}
		// h and the blocks after it up to the first one stored already
		// (heading a run: past the end of h's run, the only other place
		// a chained hash can be) go to one run at once.
		k := i + 1
		for k < len(ev.Blocks) && !c.isHead(ev.Blocks[k].BlockHash) {
			k++
		}
		if r < 0 {
			run := c.pool.get(len(ev.Blocks) - i)
			for _, b := range ev.Blocks[i:k] {
				run = append(run, b.BlockHash)
			}
			r, j = c.newRun(run), k-i-1
		} else {
			if j+1 < len(c.runs[r]) {
				c.split(r, j+1) // h branches off the run's middle
			}
			c.pushRun(r, parent, ev.Blocks[i:k])
			j += k - i
		}
		c.n += k - i
		parent, i = ev.Blocks[k-1].BlockHash, k-1
	}
	c.flush()
	return parentOK, twice, dup
}

// first is h unless a duplicate was found before (dup).
func first(twice uint64, dup bool, h uint64) uint64 {
	if dup {
		return twice
	}
	return h
}

// trim takes out the leading hashes that end the open run in turn, as
// remove would, and returns how many: eviction takes a sequence's blocks
// from its leaf back, so most removed hashes trim the run the one before
// them left open (issue 34 item 2, R7: one loop instead of a call and the
// run's header read and written per hash).
func (c *chainSet) trim(hashes []uint64) int {
	r := c.open
	if r < 0 {
		return 0
	}
	run, k := c.runs[r], 0
	for k < len(hashes) && len(run) > 1 && run[len(run)-1] == hashes[k] {
		run, k = run[:len(run)-1], k+1
	}
	c.runs[r] = run
	c.n -= k
	c.budget += scanFactor * k
	return k
}

// remove takes h out and reports whether it was stored.
func (c *chainSet) remove(h uint64) bool {
	c.budget += scanFactor
	if r := c.open; r >= 0 {
		// Eviction takes a sequence's blocks from its leaf back.
		if run := c.runs[r]; len(run) > 1 && run[len(run)-1] == h {
			c.runs[r] = run[:len(run)-1]
			c.n--
			return true
		}
		c.flush()
	}
	r, j, ok := c.find(h)
	if !ok {
		return false
	}
	c.n--
	run := c.runs[r]
	if j > 0 && j < len(run)-1 {
		c.split(r, j+1)
		run = c.runs[r]
	}
	switch {
	case len(run) == 1:
		c.deleteHead(h)
		c.tails.Delete(h)
		c.pool.put(run)
		c.runs[r] = nil
		c.free = append(c.free, r)
	case j == 0:
		c.deleteHead(h)
		c.runs[r] = run[1:]
		c.putHead(run[1], r)
	default: // the tail; tails is updated at flush
		c.runs[r] = run[:j]
		c.open, c.openKey = r, h
	}
	return true
}

// splitAfter makes hashes[j] end its run, if the chain hashes is stored
// through it: the engine a request was placed on with that cached prefix
// stores the request's next blocks after it, which then append to the run
// instead of being found by a scan.
func (c *chainSet) splitAfter(hashes []uint64, j int) {
	var run []uint64
	r, k := int32(-1), 0
	for _, h := range hashes[:j+1] {
		if k+1 < len(run) && run[k+1] == h {
			k++
			continue
		}
		s, ok := c.head(h)
		if !ok {
			return
		}
		r, run, k = s, c.runs[s], 0
	}
	if r >= 0 && k+1 < len(run) {
		c.split(r, k+1)
	}
}

// applyChain applies one device-tier event to rs's chains, reporting
// inconsistencies as Apply does.
func (ix *Indexer) applyChain(rs *rankSet, ev *kv.Event, fail func(*kv.Event, string, ...any)) {
	switch ev.Kind {
	case kv.Stored:
		parentOK, twice, dup := rs.c.store(ev)
		if !parentOK {
			fail(ev, "parent %#x not stored", ev.Parent)
		}
		if dup {
			fail(ev, "block %#x stored twice", twice)
		}
	case kv.Removed:
		for rem := ev.Removed; len(rem) > 0; {
			if !rs.c.remove(rem[0]) {
				fail(ev, "removed block %#x not stored", rem[0])
			}
			rem = rem[1+rs.c.trim(rem[1:]):]
		}
		rs.c.flush()
	default:
		fail(ev, "unknown kind %d", ev.Kind)
	}
}
