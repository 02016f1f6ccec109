package router

import (
	"fmt"

	"github.com/dynosim/dynosim-web/internal/idmap"
	"github.com/dynosim/dynosim-web/kv"
	"github.com/dynosim/dynosim-web/timing"
)

// DefaultTTL is how long the approximate mode remembers a placement: 120 s
// of virtual time (the reference's router_ttl_secs).
const DefaultTTL = 120 * timing.Time(1e9)

// Indexer is the KV router's index of cached blocks: for every (worker, DP
// rank), the set of chained sequence hashes (spec §4.1) it holds.
//
// With KV events (use_kv_events: true) the index changes only through
// Apply, which the policy calls with the events a worker published in a
// pass, at that pass's end; a hash is present from its Stored event until
// its Removed event. Without events (the approximate mode) the policy
// records its own placements with Remember, and a remembered hash is
// present until Expire passes its expiry. A hash is present while either
// source holds it.
//
// Overlap costs O(matched blocks); memory is proportional to the blocks
// indexed. Nothing iterates a map, so results never depend on map order.
type Indexer struct {
	// TTL is the lifetime of a remembered hash; ≤ 0 means DefaultTTL.
	TTL timing.Time

	blockSize int
	workers   [][]rankSet  // by worker, then DP rank
	lower     [][]lowerSet // G2 and G3 blocks by worker, then DP rank (tierindex.go)

	clock  uint64 // the last generation given to a changed rankSet
	epochs uint64 // the last epoch given to an active tree (Hold)

	// chains: a rank's stored hashes are kept as chains (chainindex.go)
	// while its Stored events chain and nothing is remembered there. The
	// KV router sets it with KV events; a rank falls back to the set for
	// good at the first event or Remember it cannot take.
	chains bool

	// peek keeps the slots Apply reads ahead of a batch of stored or
	// removed blocks (idmap.Set.Peek): the misses of a batch (78 blocks
	// on average at the benchmark) overlap instead of queueing.
	peek uint64

	// Remembered hashes, in expiry order: a doubly linked list through
	// nodes (index + 1; 0 ends it), with a free list through next.
	nodes      []ttlNode
	head, tail int32
	free       int32
}

// rankSet is the index of one (worker, DP rank): the hashes its events
// stored (s) and those remembered (t, whose value is the hash's ttlNode,
// index + 1, as ttlNode links); a hash is present if either holds it, both
// counts the hashes both hold. A router uses one source or the other, so the other is empty
// and costs no probe. The stored hashes are a key-only set: one key per
// cached block of every worker, probed at random once per block stored or
// removed, so its size decides the cache misses (issue 34 item 2: 512 KiB
// a worker at the benchmark, 2 MiB as the valued table). Its tree holds
// the KV router's active sequences' prompt blocks (activetree.go).
type rankSet struct {
	s      idmap.Set  // hashes stored by events (if c is nil)
	c      *chainSet  // hashes stored by events, as chains (chainindex.go)
	plain  bool       // s, never c, holds the stored hashes
	t      idmap.Map  // remembered hashes → ttlNode index + 1
	both   int        // hashes in s and t
	a      activeTree // active prompt blocks (Hold, Release)
	nextID uint64     // the next event id expected
	gen    uint64     // changes with anything Runs or LowerOverlap reads (Gen)
}

// has reports whether h is present.
func (rs *rankSet) has(h uint64) bool {
	if rs.s.Has(h) {
		return true
	}
	_, ok := rs.t.Get(h)
	return ok
}

// stored is the number of hashes events stored.
func (rs *rankSet) stored() int {
	if rs.c != nil {
		return rs.c.n
	}
	return rs.s.Len()
}

// unchain moves the stored hashes from chains to the set, for good.
func (rs *rankSet) unchain() {
	rs.plain = true
	if rs.c == nil {
		return
	}
	for _, run := range rs.c.runs {
		for _, h := range run {
			rs.s.Add(h)
		}
	}
	rs.c = nil
}

// prefix is the number of leading hashes present; with chains (and so
// nothing remembered) hashes must be a chain, as Indexer.Hashes gives.
func (rs *rankSet) prefix(hashes []uint64) int {
	if rs.c != nil {
		return rs.c.prefix(hashes)
	}
	for i, h := range hashes {
		if !rs.has(h) {
			return i
		}
	}
	return len(hashes)
}

// touch gives rs a new generation: something Runs or LowerOverlap reads of
// it may have changed.
func (ix *Indexer) touch(rs *rankSet) {
	ix.clock++
	rs.gen = ix.clock
}

// Gen is (worker, rank)'s generation: while it is unchanged, Runs and
// LowerOverlap of the same hashes give the same results (0: nothing held
// there). The KV router reuses a held request's runs with it.
func (ix *Indexer) Gen(worker, rank int) uint64 {
	if rs := ix.set(worker, rank); rs != nil {
		return rs.gen
	}
	return 0
}

type ttlNode struct {
	hash         uint64
	expiry       timing.Time
	worker, rank int32
	prev, next   int32
}

// NewIndexer returns an empty index for engines of block size blockSize.
func NewIndexer(blockSize int) *Indexer {
	if blockSize < 1 {
		panic(fmt.Sprintf("router: block size must be ≥ 1, got %d", blockSize))
	}
	return &Indexer{TTL: DefaultTTL, blockSize: blockSize}
}

// BlockSize is the engines' block size.
func (ix *Indexer) BlockSize() int { return ix.blockSize }

// Hashes appends to dst the chained sequence hashes of prompt's full blocks,
// computed as the engines compute them (so they equal the BlockHash of their
// Stored events), and returns the extended slice.
func (ix *Indexer) Hashes(prompt []uint32, dst []uint64) []uint64 {
	dst, _ = ix.HashesLocals(prompt, 0, dst, nil)
	return dst
}

// HashesLocals is Hashes that also appends each block's local hash to
// locals (the engine needs both: engine.Request.Hashes, Locals) unless
// locals is nil. runLen > 0 promises prompt's tokens are equal within
// each aligned run of runLen tokens (Request.RunLen): a block inside one
// run is then one token repeated, whose local hash is remembered, and its
// tokens are not compared (kv.RunMemo compares them: half of the KV
// router's prompt hashing at the issue 34 item 2 benchmark, R7).
func (ix *Indexer) HashesLocals(prompt []uint32, runLen int, dst, locals []uint64) ([]uint64, []uint64) {
	bs := ix.blockSize
	var s uint64
	var runs kv.RunMemo // trace prompts repeat a block's tokens (kv.RunMemo)
	var tok uint32      // the token whose run hashed to run (known: one was)
	var run uint64
	known := false
	for i := 0; i+bs <= len(prompt); i += bs {
		var l uint64
		if runLen > 0 && i/runLen == (i+bs-1)/runLen {
			if t := prompt[i]; !known || t != tok {
				tok, run, known = t, kv.LocalHash(prompt[i:i+bs]), true
			}
			l = run
		} else {
			l = runs.Local(prompt[i : i+bs])
		}
		if i == 0 {
			s = l
		} else {
			s = kv.ChainHash(s, l)
		}
		dst = append(dst, s)
		if locals != nil {
			locals = append(locals, l)
		}
	}
	return dst, locals
}

// set returns the index of (worker, rank), or nil if it holds nothing yet.
func (ix *Indexer) set(worker, rank int) *rankSet {
	if worker < 0 || worker >= len(ix.workers) || rank < 0 || rank >= len(ix.workers[worker]) {
		return nil
	}
	return &ix.workers[worker][rank]
}

// grow returns the index of (worker, rank), creating it.
func (ix *Indexer) grow(worker, rank int) *rankSet {
	if worker >= len(ix.workers) {
		ix.workers = append(ix.workers, make([][]rankSet, worker+1-len(ix.workers))...)
	}
	if rs := ix.workers[worker]; rank >= len(rs) {
		ix.workers[worker] = append(rs, make([]rankSet, rank+1-len(rs))...)
	}
	return &ix.workers[worker][rank]
}

// Apply applies the KV events worker published in one pass, in order. The
// index reflects the events even when they are inconsistent; Apply then
// returns an error naming the first inconsistency: an event id that does
// not follow the rank's previous one (ids start at 0), a negative rank, a
// Stored event whose parent is not stored on the rank, a hash stored twice,
// or the removal of a hash that is not stored.
func (ix *Indexer) Apply(worker int, events []kv.Event) error {
	if worker < 0 {
		return fmt.Errorf("router: kv events of worker %d", worker)
	}
	var first error
	fail := func(ev *kv.Event, format string, args ...any) {
		if first == nil {
			first = fmt.Errorf("router: worker %d rank %d event %d: %s", worker, ev.DPRank, ev.ID, fmt.Sprintf(format, args...))
		}
	}
	for i := range events {
		ev := &events[i]
		if ev.DPRank < 0 {
			fail(ev, "negative rank")
			continue
		}
		rs := ix.grow(worker, ev.DPRank)
		ix.touch(rs)
		if ev.ID != rs.nextID {
			fail(ev, "event id %d expected", rs.nextID)
		}
		rs.nextID = ev.ID + 1
		if ev.Tier != kv.Device {
			// A block in a lower tier is not a prefix hit the worker can
			// serve without onboarding it: it is indexed apart and
			// credited at the lower tiers' weights (tierindex.go).
			ix.applyLower(worker, ev)
			continue
		}
		if rs.c == nil && !rs.plain {
			if ix.chains {
				rs.c = newChainSet()
			} else {
				rs.plain = true
			}
		}
		if rs.c != nil && ev.Kind == kv.Stored && !chained(ev) {
			rs.unchain()
		}
		if rs.c != nil {
			ix.applyChain(rs, ev, fail)
			if rs.c.scanned > rs.c.budget {
				rs.unchain() // scans cost more than the set would
			}
			continue
		}
		switch ev.Kind {
		case kv.Stored:
			if ev.HasParent && !rs.s.Has(ev.Parent) {
				fail(ev, "parent %#x not stored", ev.Parent)
			}
			var peek uint64
			for _, b := range ev.Blocks {
				peek ^= rs.s.Peek(b.BlockHash)
			}
			ix.peek ^= peek
			for _, b := range ev.Blocks {
				if !rs.s.Add(b.BlockHash) {
					fail(ev, "block %#x stored twice", b.BlockHash)
				} else if _, ok := rs.t.Get(b.BlockHash); ok {
					rs.both++
				}
			}
		case kv.Removed:
			var peek uint64
			for _, h := range ev.Removed {
				peek ^= rs.s.Peek(h)
			}
			ix.peek ^= peek
			for _, h := range ev.Removed {
				if !rs.s.Remove(h) {
					fail(ev, "removed block %#x not stored", h)
				} else if _, ok := rs.t.Get(h); ok {
					rs.both--
				}
			}
		default:
			fail(ev, "unknown kind %d", ev.Kind)
		}
	}
	return first
}

// Overlap is the number of leading blocks of hashes present on (worker,
// rank): the longest prefix of the request cached there. In the
// approximate mode, call Expire(now) first.
func (ix *Indexer) Overlap(worker, rank int, hashes []uint64) int {
	rs := ix.set(worker, rank)
	if rs == nil {
		return 0
	}
	return rs.prefix(hashes)
}

// Len is the number of hashes present on (worker, rank).
func (ix *Indexer) Len(worker, rank int) int {
	if rs := ix.set(worker, rank); rs != nil {
		return rs.stored() + rs.t.Len() - rs.both
	}
	return 0
}

// Remember records that the router placed a request with block hashes on
// (worker, rank) at now: the approximate mode's stand-in for Stored events.
// Each hash is present until Expire reaches now + TTL; remembering a hash
// again extends its life. now must not decrease from call to call (an
// earlier now expires no sooner than the last call's).
func (ix *Indexer) Remember(worker, rank int, hashes []uint64, now timing.Time) {
	if worker < 0 || rank < 0 {
		panic(fmt.Sprintf("router: remember on worker %d rank %d", worker, rank))
	}
	ttl := ix.TTL
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	expiry := now + ttl
	if ix.tail != 0 {
		expiry = max(expiry, ix.nodes[ix.tail-1].expiry) // keep the list sorted
	}
	rs := ix.grow(worker, rank)
	ix.touch(rs)
	rs.unchain() // a remembered hash may not chain from a stored one
	for _, h := range hashes {
		if n, ok := rs.t.Get(h); ok {
			ix.unlink(n)
			ix.nodes[n-1].expiry = expiry
			ix.link(n)
			continue
		}
		n := ix.alloc()
		ix.nodes[n-1] = ttlNode{hash: h, expiry: expiry, worker: int32(worker), rank: int32(rank)}
		ix.link(n)
		rs.t.Put(h, n)
		if rs.s.Has(h) {
			rs.both++
		}
	}
}

// Expire forgets every remembered hash whose expiry is at or before now.
// Hashes stored by events stay. Its cost is O(hashes expired).
func (ix *Indexer) Expire(now timing.Time) {
	for ix.head != 0 && ix.nodes[ix.head-1].expiry <= now {
		n := ix.head
		e := &ix.nodes[n-1]
		rs := &ix.workers[e.worker][e.rank]
		ix.touch(rs)
		rs.t.Delete(e.hash) // forgotten
		if rs.s.Has(e.hash) {
			rs.both--
		}
		ix.unlink(n)
		ix.release(n)
	}
}

// RemoveWorker forgets everything about worker (which left the pool): its
// hashes on every rank and its event ids. Its cost is O(blocks of worker +
// hashes remembered on any worker).
func (ix *Indexer) RemoveWorker(worker int) {
	if worker < 0 || worker >= len(ix.workers) {
		return
	}
	for n := ix.head; n != 0; {
		next := ix.nodes[n-1].next
		if int(ix.nodes[n-1].worker) == worker {
			ix.unlink(n)
			ix.release(n)
		}
		n = next
	}
	ix.workers[worker] = nil
	if worker < len(ix.lower) {
		ix.lower[worker] = nil
	}
}

func (ix *Indexer) alloc() int32 {
	if n := ix.free; n != 0 {
		ix.free = ix.nodes[n-1].next
		return n
	}
	if len(ix.nodes) >= 1<<30-1 {
		panic("router: too many remembered blocks")
	}
	ix.nodes = append(ix.nodes, ttlNode{})
	return int32(len(ix.nodes))
}

func (ix *Indexer) release(n int32) {
	ix.nodes[n-1] = ttlNode{next: ix.free}
	ix.free = n
}

// link appends node n at the tail of the expiry list.
func (ix *Indexer) link(n int32) {
	e := &ix.nodes[n-1]
	e.prev, e.next = ix.tail, 0
	if ix.tail != 0 {
		ix.nodes[ix.tail-1].next = n
	} else {
		ix.head = n
	}
	ix.tail = n
}

// unlink takes node n out of the expiry list.
func (ix *Indexer) unlink(n int32) {
	e := &ix.nodes[n-1]
	if e.prev != 0 {
		ix.nodes[e.prev-1].next = e.next
	} else {
		ix.head = e.next
	}
	if e.next != 0 {
		ix.nodes[e.next-1].prev = e.prev
	} else {
		ix.tail = e.prev
	}
	e.prev, e.next = 0, 0
}

// Runs is, for (worker, rank), the leading run of hashes indexed there (as
// Overlap) and the leading run held by active sequences placed there
// (Hold). In the approximate mode, call Expire(now) first.
func (ix *Indexer) Runs(worker, rank int, hashes []uint64) (overlap, held int) {
	if rs := ix.set(worker, rank); rs != nil {
		return rs.prefix(hashes), rs.a.prefix(hashes)
	}
	return 0, 0
}

// Placed tells the index that a request with the chain hashes was placed
// on (worker, rank) with its first overlap blocks cached there: with
// chains, the run holding the cached prefix is cut after it, where the
// engine will store the request's next blocks (chainindex.go). What Runs
// and Overlap answer does not change.
func (ix *Indexer) Placed(worker, rank int, hashes []uint64, overlap int) {
	if rs := ix.set(worker, rank); rs != nil && rs.c != nil && overlap > 0 {
		rs.c.splitAfter(hashes, overlap-1)
	}
}

// Hold counts hashes, the prompt blocks of a sequence placed on (worker,
// rank), as held there until Release of what it returns; hashes stays the
// caller's.
func (ix *Indexer) Hold(worker, rank int, hashes []uint64) HeldSeq {
	rs := ix.grow(worker, rank)
	ix.touch(rs)
	if rs.a.epoch == 0 {
		ix.epochs++
		rs.a.epoch = ix.epochs
	}
	return HeldSeq{epoch: rs.a.epoch, leaf: rs.a.hold(hashes)}
}

// HeldSeq is a sequence Hold counts, for Release: its tree's epoch and its
// leaf segment (activetree.go).
type HeldSeq struct {
	epoch uint64
	leaf  int32
}

// Release undoes Hold; after RemoveWorker it does nothing (the worker's
// tree, even if its index is used again, is not the one h was held in).
func (ix *Indexer) Release(worker, rank int, h HeldSeq) {
	if rs := ix.set(worker, rank); rs != nil {
		ix.touch(rs)
		if h.epoch != 0 && rs.a.epoch == h.epoch {
			rs.a.release(h.leaf)
		}
	}
}

// Held is the number of distinct hashes held on (worker, rank).
func (ix *Indexer) Held(worker, rank int) int {
	if rs := ix.set(worker, rank); rs != nil {
		return rs.a.held
	}
	return 0
}
