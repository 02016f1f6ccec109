package engine

// The invariant checks invariant_fuzz_test.go's harness runs after every
// pass (that file's comment lists them).

import "github.com/dynosim/dynosim-web/kv"

// checkPass checks one pass's timing, signals, admissions, counters and
// events against what the harness knows.
func (h *fzHarness) checkPass(p *Pass) {
	if p.Start != h.now {
		h.failf("pass start %v, stepped at %v", p.Start, h.now)
	}
	if p.End < p.Start {
		h.failf("pass ends %v before it starts %v", p.End, p.Start)
	}
	if !p.Busy && (p.End != p.Start || len(p.Signals) > 0 || len(p.Admissions) > 0) {
		h.failf("pass not busy but took %v, %d signals, %d admissions", p.End-p.Start, len(p.Signals), len(p.Admissions))
	}
	for _, a := range p.Admissions {
		q := h.reqs[a.ID]
		if q == nil || q.done {
			h.failf("admission of unknown or finished request %d", a.ID)
		}
		if a.Reused < 0 || a.Reused > q.promptLen+q.limit {
			h.failf("request %d admitted reusing %d tokens (prompt %d, output %d)", a.ID, a.Reused, q.promptLen, q.limit)
		}
	}
	clear(h.tokens)
	ntok := 0
	for _, s := range p.Signals {
		q := h.reqs[s.ID]
		switch {
		case q == nil:
			h.failf("signal for unknown request %d", s.ID)
		case q.done:
			h.failf("signal %+v after request %d's terminal signal", s, s.ID)
		case !s.HasToken && !s.Completed:
			h.failf("empty signal %+v", s)
		}
		if s.Rejected {
			if !s.Completed || s.HasToken || s.Cached != -1 {
				h.failf("malformed rejection %+v", s)
			}
		} else if !q.signaled {
			if s.Cached < 0 || s.Cached > q.promptLen {
				h.failf("first signal of %d reports %d cached tokens of a %d-token prompt", s.ID, s.Cached, q.promptLen)
			}
			q.signaled = true
		} else if s.Cached != -1 {
			h.failf("later signal of %d reports cached %d", s.ID, s.Cached)
		}
		if s.HasToken {
			if q.planned != nil && q.emitted < len(q.planned) && s.Token != q.planned[q.emitted] {
				h.failf("request %d token %d is %d, planned %d", s.ID, q.emitted, s.Token, q.planned[q.emitted])
			}
			q.emitted++
			ntok++
			h.tokens[s.ID]++
			if q.emitted > q.limit {
				h.failf("request %d emitted %d tokens, output length %d", s.ID, q.emitted, q.limit)
			}
			if h.tokens[s.ID] > h.maxBurst {
				h.failf("request %d emitted %d tokens in one pass (burst ≤ %d)", s.ID, h.tokens[s.ID], h.maxBurst)
			}
		}
		if s.Completed {
			q.done = true
			if !s.Rejected && q.emitted != q.limit {
				h.failf("request %d completed after %d of %d tokens", s.ID, q.emitted, q.limit)
			}
		}
	}
	if len(p.Signals) > 0 && !p.Busy {
		h.failf("pass with signals is not busy")
	}

	// Counters and metrics.
	pc := p.Counters
	// Under SGLang's event loop (issue 33 item 6) a prefill forward samples
	// one token of each prompt it completes, outside the decode forwards.
	sampled := len(h.tokens) - pc.DecodeForwards
	if h.s.cfg.Policy != SGLang || h.s.cfg.SGLang.Loop == AdditivePass || h.s.cfg.Decode {
		sampled = 0
	}
	if pc.AcceptedTokens+sampled != ntok || pc.DecodeForwards+sampled != len(h.tokens) {
		h.failf("counters %+v for %d tokens of %d requests", pc, ntok, len(h.tokens))
	}
	if pc.CacheHitTokens < 0 || pc.CacheHitTokens > pc.CacheTotalTokens || pc.Retractions < 0 {
		h.failf("counters %+v", pc)
	}
	h.counters.add(pc)
	m := h.metrics()
	if p.Metrics != m {
		h.failf("pass metrics %+v, core metrics %+v", p.Metrics, m)
	}
	if m.Counters != h.counters {
		h.failf("cumulative counters %+v, sum of passes %+v", m.Counters, h.counters)
	}
	if m.ActiveBlocks < 0 || m.ActiveBlocks > m.TotalBlocks || m.TotalBlocks != h.s.cfg.NumBlocks*len(h.ranks) {
		h.failf("active blocks %d of %d (config %d × %d ranks)", m.ActiveBlocks, m.TotalBlocks, h.s.cfg.NumBlocks, len(h.ranks))
	}
	if m.Preemptions < h.preemptions || m.Retractions > m.Preemptions {
		h.failf("preemptions %d (was %d), retractions %d", m.Preemptions, h.preemptions, m.Retractions)
	}
	h.preemptions = m.Preemptions
	if h.s.cfg.Policy == TRTLLM && m.Preemptions != 0 {
		h.failf("GUARANTEED_NO_EVICT preempted %d times", m.Preemptions)
	}
	if h.s.cfg.Policy != SGLang && m.Retractions != 0 || pc.CacheTotalTokens != 0 && h.s.cfg.Policy != SGLang {
		h.failf("vLLM-shaped core counts SGLang metrics %+v", m.Counters)
	}
	if h.worker == nil {
		f := p.FPM
		if f.DecodeRequests != pc.DecodeForwards || f.QueuedPrefill+f.QueuedDecode != m.Waiting ||
			f.PrefillRequests < 0 || f.PrefillTokens < 0 || f.PrefillKVTokens < 0 {
			h.failf("fpm %+v with %d decode forwards, %d waiting", f, pc.DecodeForwards, m.Waiting)
		}
	}

	// KV events: ids in sequence per rank, no dangling parent, no re-store,
	// no removal of an unknown block.
	for _, e := range p.Events {
		if e.DPRank < 0 || e.DPRank >= len(h.index) {
			h.failf("event %+v from unknown rank", e)
		}
		x := &h.index[e.DPRank]
		if e.ID != x.next {
			h.failf("rank %d event id %d, want %d", e.DPRank, e.ID, x.next)
		}
		x.next++
		blocks := x.blocks
		if e.Tier == kv.HostPinned {
			blocks = x.host
			if e.HasParent {
				h.failf("rank %d: a host event with a parent: %+v", e.DPRank, e)
			}
		} else if e.Tier != kv.Device {
			h.failf("rank %d: an event of tier %v", e.DPRank, e.Tier)
		}
		switch e.Kind {
		case kv.Stored:
			if e.HasParent && !x.blocks[e.Parent] {
				h.failf("rank %d stored %+v under dangling parent %x", e.DPRank, e.Blocks, e.Parent)
			}
			for _, b := range e.Blocks {
				if blocks[b.BlockHash] {
					h.failf("rank %d re-stored %x (%v)", e.DPRank, b.BlockHash, e.Tier)
				}
				blocks[b.BlockHash] = true
			}
		case kv.Removed:
			for _, b := range e.Removed {
				if !blocks[b] {
					h.failf("rank %d removed unknown %x (%v)", e.DPRank, b, e.Tier)
				}
				delete(blocks, b)
			}
		default:
			h.failf("event of kind %v", e.Kind)
		}
	}
}

// checkHeld compares the cores' held counts with the requests the harness
// has seen no terminal signal for.
func (h *fzHarness) checkHeld() {
	held := make([]int, len(h.ranks))
	for _, q := range h.reqs {
		if !q.done {
			held[q.rank]++
		}
	}
	for i, rk := range h.ranks {
		live := 0
		switch c := rk.(type) {
		case *Core:
			live = c.live
		case *SGLangCore:
			live = c.live
		}
		if live != held[i] || rk.Empty() != (held[i] == 0) {
			h.failf("rank %d holds %d (empty %v), %d not terminated", i, live, rk.Empty(), held[i])
		}
	}
}

// checkCore checks the vLLM-shaped core's queues, request states, leases and
// pool after a pass.
func (h *fzHarness) checkCore(rank int, c *Core) {
	bs, pool := c.cfg.BlockSize, c.kv.Pool
	seen := map[*seq]bool{}
	ids := map[uint64]bool{}
	visit := func(s *seq, where string) {
		seen[s] = true // a state twice is an id twice: checkQueued
		h.checkQueued(rank, ids, where, queued{s.id, s.done, s.length, s.promptLen, s.generated, s.maxOutput})
		switch {
		case s.computed < 0 || s.computed > s.length:
			h.failf("rank %d: request %d computed %d of %d", rank, s.id, s.computed, s.length)
		case c.cfg.PrefixCaching && len(s.hashes) != s.length/bs:
			h.failf("rank %d: request %d has %d block hashes for %d tokens", rank, s.id, len(s.hashes), s.length)
		}
	}
	// Waiting requests hold no blocks, except the onboarded prefix of one
	// back from parking (lower tiers).
	onboarded := func(s *seq) bool { return c.tier != nil && s.onboardTo > 0 && len(s.lease.Slots) == s.onboardTo }
	for i, s := range c.waiting.items() {
		visit(s, "waiting")
		if s.status == running || s.computed != 0 || len(s.lease.Slots) != 0 && (!onboarded(s) || i > 0) {
			h.failf("rank %d: waiting request %d status %d computed %d holds %d blocks", rank, s.id, s.status, s.computed, len(s.lease.Slots))
		}
	}
	for _, s := range c.parked {
		visit(s, "parked")
		if c.tier == nil || s.status == running || s.computed != 0 || !onboarded(s) {
			h.failf("rank %d: parked request %d status %d computed %d holds %d blocks (onboarding [%d, %d))", rank, s.id, s.status, s.computed, len(s.lease.Slots), s.onboardFrom, s.onboardTo)
		}
	}
	for _, s := range c.running {
		visit(s, "running")
		if s.status != running {
			h.failf("rank %d: running request %d has status %d", rank, s.id, s.status)
		}
		if want := (s.computed + bs - 1) / bs; len(s.lease.Slots) != want {
			h.failf("rank %d: request %d holds %d blocks for %d computed tokens", rank, s.id, len(s.lease.Slots), s.computed)
		}
	}
	h.checkNoneLost(rank, ids)
	if c.live != c.waiting.len()+len(c.running)+len(c.parked) {
		h.failf("rank %d: live %d, waiting %d + running %d + parked %d", rank, c.live, c.waiting.len(), len(c.running), len(c.parked))
	}
	for _, s := range c.free {
		if seen[s] {
			h.failf("rank %d: recycled state of request %d is still queued", rank, s.id)
		}
	}
	if len(c.dead) != 0 {
		h.failf("rank %d: %d retired states not recycled after the pass", rank, len(c.dead))
	}

	// Leases against the pool.
	type use struct {
		s   *seq
		pos int
	}
	uses := map[int32][]use{}
	holders := append(append(append([]*seq(nil), c.running...), c.waiting.items()...), c.parked...)
	for _, s := range holders {
		for i, b := range s.lease.Slots {
			if b < 0 || int(b) >= pool.Capacity() {
				h.failf("rank %d: request %d holds block %d of %d", rank, s.id, b, pool.Capacity())
			}
			uses[b] = append(uses[b], use{s, i})
		}
	}
	for b, us := range uses {
		if len(us) == 1 {
			continue
		}
		for _, u := range us {
			computed := u.s.computed
			if onboarded(u.s) {
				computed = u.s.onboardTo * bs
			}
			if !c.cfg.PrefixCaching || u.pos >= computed/bs || u.s.hashes[u.pos] != us[0].s.hashes[us[0].pos] || u.s == us[0].s && u.pos != us[0].pos {
				h.failf("rank %d: block %d held %d times, by request %d at block %d (computed %d)", rank, b, len(us), u.s.id, u.pos, u.s.computed)
			}
		}
	}
	if c.cfg.PrefixCaching {
		for _, s := range c.running {
			for i := range s.computed / bs {
				got, ok := pool.Lookup(s.hashes[i])
				if !ok || c.cfg.G1 == KVBMG1 && got != s.lease.Slots[i] {
					h.failf("rank %d: request %d block %d (slot %d) not findable by its hash (found %d, %v)", rank, s.id, i, s.lease.Slots[i], got, ok)
				}
			}
		}
	}
	if np, ok := pool.(*kv.Pool); ok {
		for b := range uses {
			if !np.IsActive(b) {
				h.failf("rank %d: held block %d is not active in the pool", rank, b)
			}
		}
	}
	free, active, inactive, q, claimed := pool.Free(), pool.Active(), pool.Inactive(), pool.Quarantined(), pool.Claimed()
	if free+claimed < 0 || inactive < 0 || active != len(uses)+q || free+active+inactive+claimed != pool.Capacity() || pool.Capacity() != c.cfg.NumBlocks {
		h.failf("rank %d: pool free %d + active %d + inactive %d + claimed %d of %d; leases hold %d blocks, %d quarantined", rank, free, active, inactive, claimed, pool.Capacity(), len(uses), q)
	}
	if c.tier != nil {
		if q != c.tier.Quarantined() || claimed > q+max(free+claimed, 0) {
			h.failf("rank %d: G1 quarantines %d slots (%d claimed), its tiers worker %d", rank, q, claimed, c.tier.Quarantined())
		}
		if err := c.cfg.Tiers.Check(); err != nil {
			h.failf("rank %d: %v", rank, err)
		}
		if c.events != nil {
			for b := range h.index[rank].host {
				if !c.tier.InG2(b) {
					h.failf("rank %d: router sees host block %x G2 does not hold", rank, b)
				}
			}
		}
	} else if q != 0 || claimed != 0 {
		h.failf("rank %d: %d quarantined, %d claimed slots without tiers", rank, q, claimed)
	}
	if !c.cfg.PrefixCaching && inactive != 0 {
		h.failf("rank %d: %d cached blocks without prefix caching", rank, inactive)
	}
	if m := c.Metrics(); m.Running != len(c.running) || m.Waiting != c.waiting.len()+len(c.parked) || m.ActiveBlocks != active || m.TotalBlocks != c.cfg.NumBlocks {
		h.failf("rank %d: metrics %+v", rank, m)
	}
	// What routers see is resident (evictions are published at once).
	if c.events != nil {
		for b := range h.index[rank].blocks {
			if _, ok := pool.Lookup(b); !ok {
				h.failf("rank %d: router sees block %x the pool does not hold", rank, b)
			}
		}
		for _, s := range c.running {
			for i := range s.computed / bs {
				if !h.index[rank].blocks[s.hashes[i]] {
					h.failf("rank %d: request %d block %d computed and cached but never published", rank, s.id, i)
				}
			}
		}
	} else if len(h.index[rank].blocks) != 0 {
		h.failf("rank %d: events without an event log", rank)
	}
}

// checkSGLang checks the SGLang core's queues, request states, pages and
// radix tree after a pass.
func (h *fzHarness) checkSGLang(rank int, c *SGLangCore) {
	page, tree := c.page, c.tree
	seen := map[*seq]bool{}
	ids := map[uint64]bool{}
	private := map[int32]uint64{}
	maxLocked := 0
	visit := func(r *seq, where string) {
		seen[r] = true // a state twice is an id twice: checkQueued
		h.checkQueued(rank, ids, where, queued{r.id, r.done, r.length, r.promptLen, r.generated, r.maxOutput})
		switch {
		case r.computed < 0 || r.computed > r.length || r.computed > len(r.pages)*page:
			h.failf("rank %d: request %d materialized %d of %d with %d pages", rank, r.id, r.computed, r.length, len(r.pages))
		case len(r.keys) != r.length/page || len(r.partial) != r.length%page:
			h.failf("rank %d: request %d has %d page keys + %d partial tokens for %d tokens", rank, r.id, len(r.keys), len(r.partial), r.length)
		case r.cached < 0 || r.cached > len(r.pages) || r.cached > len(r.keys):
			h.failf("rank %d: request %d caches %d pages of %d held, %d full", rank, r.id, r.cached, len(r.pages), len(r.keys))
		case r.locked != (r.node != kv.RadixRoot) || r.locked != (r.cached > 0):
			h.failf("rank %d: request %d locked %v at node %d with %d cached pages", rank, r.id, r.locked, r.node, r.cached)
		case r.locked && (tree.PathLen(r.node) != r.cached || tree.Peek(r.keys[:r.cached]) != r.cached):
			h.failf("rank %d: request %d locks a path of %d pages (tree matches %d) for %d cached", rank, r.id,
				tree.PathLen(r.node), tree.Peek(r.keys[:r.cached]), r.cached)
		}
		for _, pg := range r.pages[r.cached:] {
			if pg < 0 || int(pg) >= c.total {
				h.failf("rank %d: request %d holds page %d of %d", rank, r.id, pg, c.total)
			}
			if o, dup := private[pg]; dup {
				h.failf("rank %d: private page %d held by requests %d and %d", rank, pg, o, r.id)
			}
			private[pg] = r.id
		}
		maxLocked = max(maxLocked, r.cached*page)
	}
	for _, r := range c.waiting.items() {
		visit(r, "waiting")
	}
	for _, r := range c.running {
		visit(r, "running")
		if r.computed != r.length {
			h.failf("rank %d: running request %d materialized %d of %d", rank, r.id, r.computed, r.length)
		}
	}
	h.checkNoneLost(rank, ids)
	if c.live != c.waiting.len()+len(c.running) {
		h.failf("rank %d: live %d, waiting %d + running %d", rank, c.live, c.waiting.len(), len(c.running))
	}
	avail, ev, prot := c.pool.Available(), tree.Evictable(), tree.Protected()
	if avail < 0 || avail > c.total || ev < 0 || prot < 0 || ev%page != 0 || prot%page != 0 ||
		prot < maxLocked || maxLocked == 0 && prot != 0 {
		h.failf("rank %d: available %d evictable %d protected %d (longest locked prefix %d tokens)", rank, avail, ev, prot, maxLocked)
	}
	if avail+tree.Len()/page+len(private) != c.total || c.pool.Total() != c.total || c.total != c.cfg.NumBlocks {
		h.failf("rank %d: pages free %d + cached %d + private %d ≠ %d", rank, avail, tree.Len()/page, len(private), c.total)
	}
	if m := c.Metrics(); m.Running != len(c.running) || m.Waiting != c.waiting.len() || m.ActiveBlocks != c.total-avail || m.TotalBlocks != c.total {
		h.failf("rank %d: metrics %+v", rank, m)
	}
	if c.events != nil {
		// Every full page a request computed is router-visible.
		for _, r := range c.running {
			h.checkPublished(rank, r)
		}
		for _, r := range c.waiting.items() {
			h.checkPublished(rank, r)
		}
	} else if len(h.index[rank].blocks) != 0 {
		h.failf("rank %d: events without an event log", rank)
	}
}

func (h *fzHarness) checkPublished(rank int, r *seq) {
	n := min(len(r.hashes), r.computed/h.s.cfg.BlockSize)
	if len(r.hashes) != len(r.keys) {
		h.failf("rank %d: request %d has %d block hashes for %d pages", rank, r.id, len(r.hashes), len(r.keys))
	}
	for i := range n {
		if !h.index[rank].blocks[r.hashes[i]] {
			h.failf("rank %d: request %d page %d computed but not published", rank, r.id, i)
		}
	}
}
