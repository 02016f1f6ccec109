package kv

// This file holds the SGLang memory model (spec §3.2): a page pool of
// fixed-size token pages and a compressed radix tree over page identities
// that caches the KV of finished and in-flight sequences.

// PagePool hands out the pages of an SGLang token pool. An allocation of k
// pages first takes the last min(k, free) entries of the free list, in the
// order they were freed, then fresh increasing page ids (the reference's
// order, which decides which physical pages a request gets).
//
// With Publish, the pool also publishes the router-visible KV events of its
// pages (spec §3.9), whether a request or the radix cache holds them.
type PagePool struct {
	total int
	free  []int32
	next  int32 // first never-used page id

	log       *EventLog // nil: no events
	tokenKeys bool
	pageHash  []uint64         // block hash of each page holding a full page; 0: none
	hashRefs  map[uint64]int32 // pages per block hash (visible while > 0)
	removed   []uint64         // hashes whose last page went since the last Flush
}

// NewPagePool returns a pool of pages pages.
func NewPagePool(pages int) *PagePool { return &PagePool{total: pages} }

// Total is the number of pages.
func (p *PagePool) Total() int { return p.total }

// Available is the number of unallocated pages.
func (p *PagePool) Available() int { return len(p.free) + p.total - int(p.next) }

// Alloc appends k pages to dst; it fails without side effects when fewer
// than k pages are available.
func (p *PagePool) Alloc(k int, dst []int32) ([]int32, bool) {
	if k > p.Available() {
		return dst, false
	}
	n := min(k, len(p.free))
	dst = append(dst, p.free[len(p.free)-n:]...)
	p.free = p.free[:len(p.free)-n]
	for range k - n {
		dst = append(dst, p.next)
		p.next++
	}
	return dst, true
}

// Free returns pages to the pool. When publishing, a block hash whose last
// page goes is removed (published at the next Flush).
func (p *PagePool) Free(pages ...int32) {
	if p.log != nil {
		p.unstore(pages)
	}
	p.free = append(p.free, pages...)
}

// Publish makes the pool publish KV events to log: a block hash is stored
// when a first page holds it (Store) and removed when its last page is freed
// (Free, then Flush). With tokenKeys the page keys given to Store are the
// tokens of one-token pages, whose local hash the events carry.
func (p *PagePool) Publish(log *EventLog, tokenKeys bool) {
	p.log, p.tokenKeys = log, tokenKeys
	p.pageHash = make([]uint64, p.total)
	p.hashRefs = make(map[uint64]int32)
}

// Store records that pages[from:to] hold full, computed pages whose block
// hashes are seq[from:to] and whose keys (local hashes) are keys[from:to]. A
// hash whose first page this is becomes visible; consecutive new hashes form
// one Stored event. Without Publish it does nothing.
func (p *PagePool) Store(pages []int32, seq, keys []uint64, from, to int) {
	if p.log != nil {
		p.store(pages, seq, keys, from, to)
	}
}

func (p *PagePool) store(pages []int32, seq, keys []uint64, from, to int) {
	// Removals from evictions earlier in the pass go out first, so a hash
	// evicted and stored again in one pass ends stored at the router (as
	// the block manager flushes its removals after each allocation).
	p.Flush()
	var ev *Event
	for i := from; i < to; i++ {
		pg, h := pages[i], seq[i]
		if p.pageHash[pg] == h {
			continue // a tree page the holder already shares
		}
		p.pageHash[pg] = h
		p.hashRefs[h]++
		if p.hashRefs[h] > 1 {
			ev = nil
			continue
		}
		local := keys[i]
		if p.tokenKeys {
			local = LocalHash([]uint32{uint32(local)})
		}
		ev = p.log.stored(ev, seq, i, local)
	}
}

func (p *PagePool) unstore(pages []int32) {
	for _, pg := range pages {
		h := p.pageHash[pg]
		if h == 0 {
			continue
		}
		p.pageHash[pg] = 0
		if p.hashRefs[h]--; p.hashRefs[h] == 0 {
			delete(p.hashRefs, h)
			p.removed = append(p.removed, h)
		}
	}
}

// Flush publishes the hashes removed since the last Flush as one Removed
// event (none if there are none). Store flushes before it stores, and the
// SGLang core once more at the end of each pass.
func (p *PagePool) Flush() { p.removed = p.log.removed(p.removed) }

// RadixRoot is the node id of the tree's root (the empty prefix).
const RadixRoot int32 = 0

// Radix is a compressed radix tree keyed by page identities (the local hash
// of each page's tokens; equal hashes are equal pages). Each node holds a run
// of page keys and the physical pages that cache them. Locks are counted
// along the path to the root, so a node with lockRef 0 has no locked
// descendant and, if it is a leaf, can be evicted.
//
// Recency uses a logical clock instead of the reference's wall clock, so
// eviction order is deterministic: oldest last access first, ties by node id
// (creation order).
type Radix struct {
	PageSize int

	nodes     []rnode
	freeNodes []int32
	nextID    uint64
	clock     uint64
	evictable int    // tokens in unlocked nodes
	protected int    // tokens in locked nodes
	leaves    idHeap // unlocked leaves, ordered by (access, id)
}

type rnode struct {
	parent   int32
	children map[uint64]int32 // by first key of the child's edge
	keys     []uint64
	pages    []int32
	lockRef  int32
	access   uint64
	id       uint64
	live     bool
}

// NewRadix returns an empty tree.
func NewRadix(pageSize int) *Radix {
	r := &Radix{PageSize: pageSize}
	r.nodes = append(r.nodes, rnode{parent: -1, live: true, lockRef: 1})
	return r
}

// Evictable is the number of tokens cached in unlocked nodes.
func (r *Radix) Evictable() int { return r.evictable }

// Protected is the number of tokens cached in locked nodes.
func (r *Radix) Protected() int { return r.protected }

// Len is the number of cached tokens.
func (r *Radix) Len() int { return r.evictable + r.protected }

// allocNode returns an unused node slot, reusing freed ones first.
func (r *Radix) allocNode() int32 {
	if n := len(r.freeNodes); n > 0 {
		id := r.freeNodes[n-1]
		r.freeNodes = r.freeNodes[:n-1]
		return id
	}
	r.nodes = append(r.nodes, rnode{})
	return int32(len(r.nodes) - 1)
}

func (r *Radix) newNode(parent int32, keys []uint64, pages []int32, access uint64) int32 {
	id := r.allocNode()
	r.nextID++
	r.nodes[id] = rnode{parent: parent, keys: keys, pages: pages, access: access, id: r.nextID, live: true}
	p := &r.nodes[parent]
	if p.children == nil {
		p.children = make(map[uint64]int32)
	}
	if len(p.children) == 0 && parent != RadixRoot {
		r.leaves.remove(parent) // no longer a leaf
	}
	p.children[keys[0]] = id
	return id
}

// Peek returns how many leading pages of keys are cached, without touching
// or splitting anything (the LPM policy's read-only probe).
func (r *Radix) Peek(keys []uint64) int {
	n, matched := RadixRoot, 0
	for matched < len(keys) {
		c, ok := r.nodes[n].children[keys[matched]]
		if !ok {
			break
		}
		e := r.nodes[c].keys
		k := commonPrefix(e, keys[matched:])
		matched += k
		if k < len(e) {
			break
		}
		n = c
	}
	return matched
}

// descend takes one edge down from n along keys: it returns the child whose
// edge starts with keys[0] and how many keys that edge matches (0: no such
// child), splitting a partly matched edge so the child ends at the match,
// and touches the child at time t.
func (r *Radix) descend(n int32, keys []uint64, t uint64) (int32, int) {
	c, ok := r.nodes[n].children[keys[0]]
	if !ok {
		return 0, 0
	}
	k := commonPrefix(r.nodes[c].keys, keys)
	if k < len(r.nodes[c].keys) {
		c = r.split(c, k)
	}
	r.touch(c, t)
	return c, k
}

// MatchFrom walks keys down from node, whose path must end exactly where
// keys start, appends the cached pages to dst and returns them with the
// deepest matched node. A partially matched edge is split so the returned
// node ends exactly at the match. The walked path is touched.
func (r *Radix) MatchFrom(node int32, keys []uint64, dst []int32) ([]int32, int32) {
	r.clock++
	t := r.clock
	n, matched := node, 0
	for matched < len(keys) {
		c, k := r.descend(n, keys[matched:], t)
		if k == 0 {
			break
		}
		dst = append(dst, r.nodes[c].pages...)
		matched += k
		n = c
	}
	return dst, n
}

// Match is MatchFrom the root.
func (r *Radix) Match(keys []uint64, dst []int32) ([]int32, int32) {
	return r.MatchFrom(RadixRoot, keys, dst)
}

// split cuts node c after k keys: a new parent takes the first k keys and
// pages, c keeps the rest (and its id, locks and heap position), so any
// holder of c still ends at the same place. It returns the new parent.
func (r *Radix) split(c int32, k int) int32 {
	old := &r.nodes[c]
	parent := old.parent
	keys, pages := old.keys, old.pages
	// The new node copies its part so later appends to either cannot alias.
	nk := append([]uint64(nil), keys[:k]...)
	np := append([]int32(nil), pages[:k]...)
	old.keys, old.pages = keys[k:], pages[k:]
	lock, access := old.lockRef, old.access
	r.nextID++
	id := r.allocNode()
	r.nodes[id] = rnode{parent: parent, keys: nk, pages: np, lockRef: lock, access: access, id: r.nextID, live: true,
		children: map[uint64]int32{r.nodes[c].keys[0]: c}}
	r.nodes[c].parent = id
	r.nodes[parent].children[nk[0]] = id
	return id
}

func (r *Radix) touch(c int32, t uint64) {
	n := &r.nodes[c]
	n.access = t
	r.leaves.rekey(c, t)
}

// InsertFrom caches keys with their pages below node (whose path ends where
// keys start). It returns how many leading keys were already cached and the
// node where the inserted run ends. For the already-cached part, pages is
// overwritten with the tree's pages and the caller's displaced pages (the
// duplicates, to be freed) are appended to displaced. hold says the caller
// holds a lock on node: if node is then a leaf locked only by the caller,
// the new run is appended to it in place instead of growing a chain of
// one-page nodes (decode inserts one page at a time); spare is how many
// more pages the caller expects to append that way, reserved as capacity of
// a new leaf so those appends do not copy it.
func (r *Radix) InsertFrom(node int32, keys []uint64, pages []int32, hold bool, spare int, displaced []int32) (dup int, end int32, _ []int32) {
	r.clock++
	t := r.clock
	n := node
	for dup < len(keys) {
		c, k := r.descend(n, keys[dup:], t)
		if k == 0 {
			break
		}
		for i, pg := range r.nodes[c].pages {
			if pages[dup+i] != pg {
				displaced = append(displaced, pages[dup+i])
				pages[dup+i] = pg
			}
		}
		dup += k
		n = c
	}
	if dup == len(keys) {
		return dup, n, displaced
	}
	tokens := (len(keys) - dup) * r.PageSize
	nd := &r.nodes[n]
	if hold && n == node && n != RadixRoot && len(nd.children) == 0 && nd.lockRef == 1 &&
		cap(nd.keys)-len(nd.keys) >= len(keys)-dup && cap(nd.pages)-len(nd.pages) >= len(keys)-dup {
		// Only within spare capacity: growing a long leaf by copying it
		// would cost O(leaf) per decode page; a new child is O(1).
		nd.keys = append(nd.keys, keys[dup:]...)
		nd.pages = append(nd.pages, pages[dup:]...)
		nd.access = t
		r.protected += tokens
		return dup, n, displaced
	}
	rest := len(keys) - dup
	nk := append(make([]uint64, 0, rest+spare), keys[dup:]...)
	np := append(make([]int32, 0, rest+spare), pages[dup:]...)
	c := r.newNode(n, nk, np, t)
	r.evictable += tokens
	r.leaves.push(c, t, r.nodes[c].id)
	return dup, c, displaced
}

// Lock protects node and its ancestors from eviction.
func (r *Radix) Lock(node int32) {
	for n := node; n != RadixRoot; n = r.nodes[n].parent {
		nd := &r.nodes[n]
		if nd.lockRef == 0 {
			t := len(nd.keys) * r.PageSize
			r.evictable -= t
			r.protected += t
			r.leaves.remove(n)
		}
		nd.lockRef++
	}
}

// Unlock undoes one Lock of node.
func (r *Radix) Unlock(node int32) {
	for n := node; n != RadixRoot; n = r.nodes[n].parent {
		nd := &r.nodes[n]
		nd.lockRef--
		if nd.lockRef == 0 {
			t := len(nd.keys) * r.PageSize
			r.evictable += t
			r.protected -= t
			if len(nd.children) == 0 {
				r.leaves.push(n, nd.access, nd.id)
			}
		}
	}
}

// Evict frees at least pages pages (when that many are evictable) from the
// least recently used unlocked leaves, trimming a leaf's newest pages when
// only part of it is needed, and appends the freed pages to freed (for the
// caller to return to the PagePool, which publishes their removal).
func (r *Radix) Evict(pages int, freed []int32) []int32 {
	for pages > 0 && r.leaves.len() > 0 {
		c := r.leaves.min()
		nd := &r.nodes[c]
		if len(nd.pages) > pages {
			keep := len(nd.pages) - pages
			freed = append(freed, nd.pages[keep:]...)
			nd.pages, nd.keys = nd.pages[:keep], nd.keys[:keep]
			r.evictable -= pages * r.PageSize
			break
		}
		freed = append(freed, nd.pages...)
		pages -= len(nd.pages)
		r.evictable -= len(nd.pages) * r.PageSize
		r.leaves.remove(c)
		parent := nd.parent
		delete(r.nodes[parent].children, nd.keys[0])
		r.nodes[c] = rnode{}
		r.freeNodes = append(r.freeNodes, c)
		if p := &r.nodes[parent]; parent != RadixRoot && len(p.children) == 0 && p.lockRef == 0 {
			r.leaves.push(parent, p.access, p.id)
		}
	}
	return freed
}

// PathLen is the number of pages on the path from the root to node.
func (r *Radix) PathLen(node int32) int {
	n := 0
	for ; node != RadixRoot; node = r.nodes[node].parent {
		n += len(r.nodes[node].keys)
	}
	return n
}

func commonPrefix(a, b []uint64) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}
