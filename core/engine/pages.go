package engine

import "github.com/dynosim/dynosim-web/kv"

// pageMem is the request book's memory under the SGLang core: a token pool
// of pages and a radix prefix cache. A request's leading full pages are
// owned by the tree and locked through its node; the rest are private.
type pageMem struct {
	page    int // tokens per page (Config.BlockSize)
	total   int // pages
	pool    *kv.PagePool
	tree    *kv.Radix
	hashing bool    // KV events on: full pages carry chained block hashes
	reserve []int32 // pages set aside for this pass's decode growth (grow takes them)
	scratch []int32
}

// index records the page identities of the prompt's full pages and keeps
// the trailing partial page's tokens.
func (c *pageMem) index(r *seq, req *Request) {
	prompt := req.Prompt
	r.node = kv.RadixRoot
	n := len(prompt) / c.page
	// Room for the whole sequence up front: prompts are long and outputs
	// grow these one page at a time.
	full := (len(prompt) + r.maxOutput + c.page - 1) / c.page
	r.keys = make([]uint64, 0, full)
	// r.pages is allocated at the first prefill (allocPrefill): a backlog of
	// waiting prompts then holds only their keys.
	if c.page == 1 && !c.hashing {
		for _, t := range prompt {
			r.keys = append(r.keys, uint64(t))
		}
	} else {
		for i := range n {
			c.addPage(r, prompt[i*c.page:(i+1)*c.page])
		}
	}
	r.partial = append(make([]uint32, 0, c.page), prompt[n*c.page:]...)
}

// reservePrompt reserves pages for the whole prompt, its cached prefix
// locked in the tree.
func (c *pageMem) reservePrompt(r *seq) (int, bool) {
	prefix, _, ok := c.allocPrefill(r, r.length)
	return prefix, ok
}

// fillPrompt has nothing to do: the reserved pages hold the prompt once
// it counts as computed (the book sets that).
func (c *pageMem) fillPrompt(*seq) {}

// grow takes a page from the decode's reserve when tok starts one, and
// closes the trailing page when tok fills it.
func (c *pageMem) grow(r *seq, tok uint32) {
	if r.length > len(r.pages)*c.page {
		r.pages = append(r.pages, c.reserve[len(c.reserve)-1])
		c.reserve = c.reserve[:len(c.reserve)-1]
	}
	r.computed++
	r.partial = append(r.partial, tok)
	if len(r.partial) == c.page {
		c.addPage(r, r.partial)
		r.partial = r.partial[:0]
	}
}

// settle publishes the pages the burst filled (its full pages before it
// were before/page) and, for a request that goes on, caches them.
func (c *pageMem) settle(r *seq, before int, done bool) {
	c.publish(r, before/c.page, len(r.keys))
	if !done && len(r.keys) > r.cached { // cacheUpTo's own test, hoisted
		c.cacheUpTo(r, len(r.keys))
	}
}

// keep caches r's full computed pages in the tree (duplicates are freed)
// as it leaves the running batch (spec §3.8).
func (c *pageMem) keep(r *seq) {
	c.cacheUpTo(r, min(len(r.keys), r.computed/c.page))
}

// drop frees r's private pages (its trailing partial page) and unlocks its
// path.
func (c *pageMem) drop(r *seq) { c.release(r, 0) }

// allocPrefill extends r's cached prefix as far as the tree allows and
// allocates pages up to end tokens. It returns the prefix (tokens already
// materialized or cached) and the number of fresh pages.
//
// Every prefill round matches the whole cached prefix from where r's cached
// pages end, so a prompt whose cached prefix is longer than one chunk, or
// that became cached while r was between chunks, does not recompute it
// (the reference matches only on the first chunk and only up to its end:
// SGLang issue 13188).
func (c *pageMem) allocPrefill(r *seq, end int) (prefix, fresh int, ok bool) {
	if r.pages == nil {
		// Room for the whole sequence: outputs grow it one page at a time.
		r.pages = make([]int32, 0, (r.promptLen+r.maxOutput+c.page-1)/c.page+1)
	}
	wasFresh := r.computed == 0 && len(r.pages) == 0
	if r.cached*c.page == r.computed && len(r.pages) == r.cached && r.cached < len(r.keys) {
		from := r.node
		var n int32
		r.pages, n = c.tree.MatchFrom(from, r.keys[r.cached:], r.pages)
		if n != from {
			c.tree.Lock(n)
			if r.locked {
				c.tree.Unlock(from)
			}
			r.node, r.locked = n, true
		}
		r.cached = len(r.pages)
	}
	prefix = max(r.computed, r.cached*c.page)
	need := (max(end, prefix)+c.page-1)/c.page - len(r.pages)
	if need > 0 {
		avail := c.pool.Available()
		if need > avail+c.tree.Evictable()/c.page {
			if wasFresh {
				c.release(r, 0)
			}
			return 0, 0, false
		}
		if short := need - avail; short > 0 {
			c.evict(short)
		}
		r.pages, _ = c.pool.Alloc(need, r.pages)
		fresh = need
	}
	return prefix, fresh, true
}

// cacheUpTo inserts r's first full pages into the tree (they must be
// materialized), frees r's copies of pages the tree already had, and moves
// r's lock to the end of the inserted run.
func (c *pageMem) cacheUpTo(r *seq, full int) {
	if full <= r.cached {
		return
	}
	disp := c.scratch[:0]
	var end int32
	spare := (r.remaining(0) + c.page - 1) / c.page // decode extends the leaf in place
	_, end, disp = c.tree.InsertFrom(r.node, r.keys[r.cached:full], r.pages[r.cached:full], r.locked, spare, disp)
	c.pool.Free(disp...)
	c.scratch = disp[:0]
	if end != r.node || !r.locked {
		c.tree.Lock(end)
		if r.locked {
			c.tree.Unlock(r.node)
		}
		r.node, r.locked = end, true
	}
	r.cached = full
}

// release frees r's private pages from index keep on and its lock.
func (c *pageMem) release(r *seq, keep int) {
	from := max(r.cached, keep)
	c.pool.Free(r.pages[from:]...)
	r.pages = r.pages[:0]
	if r.locked {
		c.tree.Unlock(r.node)
	}
	r.node, r.locked, r.cached = kv.RadixRoot, false, 0
}

// publish records that pages [from, to) of r hold full, computed pages
// (spec §3.9): the pool publishes the hashes that became visible.
func (c *pageMem) publish(r *seq, from, to int) {
	c.pool.Store(r.pages, r.hashes, r.keys, from, to)
}

// evict frees pages pages from the tree's least recently used leaves.
func (c *pageMem) evict(pages int) {
	freed := c.tree.Evict(pages, c.scratch[:0])
	c.pool.Free(freed...)
	c.scratch = freed[:0]
}

// addPage appends the identity of a full page of r's sequence: the local
// hash of its tokens, as in the reference, except with page size 1, where
// the token itself is an exact identity and hashing every prompt token
// would dominate the run (events still carry the local hash).
func (c *pageMem) addPage(r *seq, toks []uint32) {
	var l uint64
	if c.page == 1 {
		r.keys = append(r.keys, uint64(toks[0]))
		if !c.hashing {
			return
		}
		l = kv.LocalHash(toks)
	} else {
		l = kv.LocalHash(toks)
		r.keys = append(r.keys, l)
	}
	if c.hashing {
		h := l
		if n := len(r.hashes); n > 0 {
			h = kv.ChainHash(r.hashes[n-1], l)
		}
		r.hashes = append(r.hashes, h)
	}
}
