package engine

import (
	"cmp"
	"math"
	"slices"

	"github.com/dynosim/dynosim-web/kv"
	"github.com/dynosim/dynosim-web/timing"
)

// Constants of the reference scheduler (spec §3.1, §3.6).
const (
	lpmMaxWaiting   = 128 // LPM falls back to FIFO above this many waiting
	lpmDupThreshold = 32  // tokens: short-prefix duplicates are deprioritized
)

// SGLangCore is the SGLang-shaped scheduler of one data-parallel rank
// (spec §3): a token pool of pages with a radix prefix cache, a prefill
// batch and a decode step shaped as SGLangConfig.Loop says (sglang_loop.go),
// and retraction (recompute with the cached prefix kept) instead of
// preemption.
//
// Costs: a pass is O(batch + pages touched); a prefix lookup walks the
// request's pages once (O(prompt pages)); eviction is O(log nodes) per leaf.
type SGLangCore struct {
	book
	pageMem
	sg SGLangConfig

	ratio, initRatio, minRatio, decay float64

	batch     []*seq
	retracted []*seq
	lpmSeen   map[uint64]bool
	prefill   welford
	decodeW   welford
	sampled   []*seq       // prompts completed by this pass's prefill forward (sample)
	mixed     timing.Mixed // cfg.Model, when it prices a mixed forward as one
}

// NewSGLang returns an SGLang core.
func NewSGLang(cfg Config) (*SGLangCore, error) {
	cfg.Policy = SGLang
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	sg := cfg.SGLang.withDefaults()
	c := &SGLangCore{sg: sg}
	c.mixed, _ = cfg.Model.(timing.Mixed)
	c.pageMem = pageMem{page: cfg.BlockSize, total: cfg.NumBlocks, pool: kv.NewPagePool(cfg.NumBlocks), tree: kv.NewRadix(cfg.BlockSize)}
	var err error
	if c.book, err = newBook(cfg, &c.pageMem); err != nil {
		return nil, err
	}
	c.initRatio = float64(0.7 * sg.Conservativeness)
	c.minRatio = float64(c.initRatio * 0.14)
	c.decay = (c.initRatio - c.minRatio) / 600
	c.ratio = c.initRatio
	if cfg.Events && cfg.PrefixCaching {
		c.events = &kv.EventLog{DPRank: cfg.DPRank, Transient: cfg.TransientEvents}
		c.hashing = true
		// With page size 1 the page keys are the tokens (addPage).
		c.pool.Publish(c.events, cfg.BlockSize == 1)
	}
	return c, nil
}

// Metrics implements Rank. As in the reference, pages cached in the tree
// count as used: active = pages not free.
func (c *SGLangCore) Metrics() Metrics {
	return c.metrics(c.total-c.pool.Available(), 0)
}

// Tree exposes the radix cache (read-only use: tests and tools).
func (c *SGLangCore) Tree() *kv.Radix { return c.tree }

// PagePool exposes the page pool (read-only use: tests and tools).
func (c *SGLangCore) PagePool() *kv.PagePool { return c.pool }

// SGLangState is a read-only view of one SGLang request.
type SGLangState struct {
	Materialized, Allocated, Generated, Length int
	Running, Retracted                         bool
}

// State returns the state of request id (O(n): tests and tools).
func (c *SGLangCore) State(id uint64) (SGLangState, bool) {
	for _, r := range c.running {
		if r.id == id {
			return c.state(r, true), true
		}
	}
	for _, r := range c.waiting.items() {
		if r.id == id {
			return c.state(r, false), true
		}
	}
	return SGLangState{}, false
}

func (c *SGLangCore) state(r *seq, running bool) SGLangState {
	return SGLangState{Materialized: r.computed, Allocated: len(r.pages) * c.page, Generated: r.generated,
		Length: r.length, Running: running, Retracted: r.status == preempted}
}

// WaitingIDs lists the waiting queue in order (tests and tools).
func (c *SGLangCore) WaitingIDs() []uint64 {
	var out []uint64
	for _, r := range c.waiting.items() {
		out = append(out, r.id)
	}
	return out
}

// Step implements Rank: one SGLang pass (spec §3.4).
func (c *SGLangCore) Step(now timing.Time) *Pass {
	p := c.begin(now)
	c.batch, c.retracted = c.batch[:0], c.retracted[:0]
	c.prefill, c.decodeW = welford{}, welford{}
	if c.pending.len() > 0 {
		c.grantReservations()
	}

	loop := c.sg.Loop != AdditivePass && !c.cfg.Decode
	if loop && len(c.running) == 0 && !c.chunking() {
		c.ratio = c.initRatio // the loop found nothing to run: idle (sglang_loop.go)
	}
	if c.sg.Schedule == LPM {
		c.sortLPM()
	}
	var rejected []Signal
	if c.admit(&rejected) {
		c.ratio = c.initRatio
	}
	var d timing.Time
	decays := true // mocker.md §3.4: every pass
	if loop {
		d, decays = c.loopPass()
	} else {
		d = c.pricePrefill()
		c.placeBatch()
		d += c.decode()
	}
	for i := len(c.retracted) - 1; i >= 0; i-- {
		c.waiting.pushFront(c.retracted[i])
	}
	if len(c.retracted) > 0 {
		c.ratio = c.initRatio
		decays = decays && !loop // SGLang's update_running_batch decays only without retraction
	}
	if decays {
		c.ratio = max(c.ratio-c.decay, c.minRatio)
	}

	p.Signals = append(p.Signals, rejected...)
	p.End = now + min(d, timing.Horizon) // saturated: the replay stops at the horizon
	if c.events != nil {
		c.pool.Flush()
		p.Events = c.events.Drain()
	}
	f := &p.FPM
	f.VarPrefillLength = c.prefill.variance()
	f.VarDecodeKVTokens = c.decodeW.variance()
	c.queued(f, nil)
	f.Wall = p.End - now
	if c.cfg.Watch != 0 {
		c.watchPass(p)
	}
	c.counters.add(p.Counters)
	c.metricsInto(&p.Metrics, c.total-c.pool.Available(), 0)
	p.Busy = p.Busy || len(p.Signals) > 0 || len(c.batch) > 0 || len(c.retracted) > 0 || d > 0 || len(p.Reserved) > 0
	c.recycle()
	return p
}

// pricePrefill is the duration of the pass's prefill batch.
func (c *SGLangCore) pricePrefill() timing.Time {
	n, isl, prefix := c.prefillShape()
	return c.cfg.Scale.Prefill(c.cfg.Model, n, isl, prefix)
}

// prefillShape is the prefill batch's size and its mean sequence end and
// cached prefix (n 0: nothing to price).
func (c *SGLangCore) prefillShape() (n, isl, prefix int) {
	n = len(c.batch)
	if n == 0 || c.cfg.Decode { // a decode worker's recompute is free
		return 0, 0, 0
	}
	sumEnd, sumPrefix := 0, 0
	for _, r := range c.batch {
		sumEnd += r.computed
		sumPrefix += r.passPrefix
	}
	return n, sumEnd / n, sumPrefix / n
}

// placeBatch moves the prefill batch on: prompts now fully computed run;
// partial chunks cache their page-aligned prefix (kept locked) and go back
// to the front of the waiting queue.
func (c *SGLangCore) placeBatch() {
	for i := len(c.batch) - 1; i >= 0; i-- {
		if r := c.batch[i]; r.computed < r.length {
			c.cacheUpTo(r, r.computed/c.page)
			c.waiting.pushFront(r)
		}
	}
	for _, r := range c.batch {
		if r.computed == r.length {
			c.running = append(c.running, r)
		}
	}
}

func (c *SGLangCore) ceilPage(tokens int) int { return (tokens + c.page - 1) / c.page * c.page }

// sortLPM applies the longest-prefix-match policy (spec §3.6): longer cached
// prefix first, and requests that duplicate an earlier waiting request's
// first 32 tokens without a cached prefix last, so one of them warms the
// cache for the others.
//
// A request part-way through a chunked prefill is not sorted: SGLang keeps
// it apart from the waiting queue (Scheduler.chunked_req) and adds its next
// chunk before any waiting request (get_new_batch_prefill), so only the
// queue behind it is ordered (python/sglang/srt/managers/scheduler.py,
// schedule_policy.py SchedulePolicy.calc_priority). Sorting it with the
// rest let a request with a longer cached prefix overtake it, leaving its
// pages locked and its prefill half done.
func (c *SGLangCore) sortLPM() {
	w := c.waiting.items()
	if len(w) > lpmMaxWaiting {
		return
	}
	for len(w) > 0 && c.midPrefill(w[0]) {
		w = w[1:] // placeBatch pushed it to the front
	}
	if len(w) < 2 {
		return
	}
	d := (lpmDupThreshold + c.page - 1) / c.page // pages
	if c.lpmSeen == nil {
		c.lpmSeen = make(map[uint64]bool)
	}
	clear(c.lpmSeen)
	for _, r := range w {
		r.lpmPrefix = c.tree.Peek(r.keys) * c.page
		r.lpmDepri = false
		if r.lpmPrefix <= lpmDupThreshold && r.length >= d*c.page {
			h := r.keys[0]
			for _, k := range r.keys[1:d] {
				h = kv.ChainHash(h, k)
			}
			r.lpmDepri = c.lpmSeen[h]
			c.lpmSeen[h] = true
		}
	}
	slices.SortStableFunc(w, func(a, b *seq) int {
		if a.lpmDepri != b.lpmDepri {
			if a.lpmDepri {
				return 1
			}
			return -1
		}
		return cmp.Compare(b.lpmPrefix, a.lpmPrefix)
	})
}

// midPrefill says whether waiting request r is part-way through a chunked
// prefill: it ran a chunk and was neither retracted nor released since.
func (c *SGLangCore) midPrefill(r *seq) bool {
	return !r.fresh && r.status == running && r.computed > 0 && r.computed < r.length
}

// admit forms the prefill batch (spec §3.5). It reports whether an
// allocation failed (out of memory).
func (c *SGLangCore) admit(rejected *[]Signal) (oom bool) {
	p := &c.pass
	reserved := 0.0
	for _, r := range c.running {
		reserved += float64(float64(min(r.remaining(0), c.sg.ClipMaxNewTokens)) * c.ratio)
	}
	remTotal := float64((c.pool.Available()*c.page)+c.tree.Evictable()) - reserved
	remInput, remChunk := c.sg.MaxPrefillTokens, c.sg.ChunkedPrefillSize
	// The reference chunks a prompt longer than chunked_prefill_size;
	// SGLang one longer than what is left of it (budgets).
	chunkAbove := &c.sg.ChunkedPrefillSize
	if c.sg.Loop != AdditivePass && !c.cfg.Decode {
		remInput, remChunk = c.budgets()
		chunkAbove = &remChunk
	}
	slots := math.MaxInt
	if c.cfg.MaxSeqs > 0 {
		slots = c.cfg.MaxSeqs - len(c.running)
	}
	for len(c.batch) < slots && c.waiting.len() > 0 {
		r := c.waiting.front()
		if !r.fresh && r.remaining(0) > 0 && c.room(r) < 1 {
			// It could never decode again (it outgrew the pool while
			// running: see decode). A fresh prompt past the pool is the
			// reference's chunked case (S3) and meets stuck instead.
			c.reject(r, rejected)
			continue
		}
		extend := r.length - r.computed
		if extend == 0 {
			// An empty prompt: nothing to prefill, it decodes at once.
			c.waiting.popFront()
			r.fresh, r.passPrefix = false, 0
			p.Admissions = append(p.Admissions, Admission{ID: r.id, Again: r.status == preempted})
			c.batch = append(c.batch, r)
			continue
		}
		chunk := extend
		if extend > *chunkAbove {
			if chunk = remChunk / c.page * c.page; chunk <= 0 {
				break
			}
			chunk = min(chunk, extend)
		}
		charged := c.ceilPage(chunk)
		end := r.computed + chunk
		out := 0
		if end == r.length {
			out = min(r.remaining(0), c.sg.ClipMaxNewTokens)
		}
		// As in the reference, the chunk is sized before the prefix match,
		// so a fresh request's cached prefix counts against the budgets.
		// The first request of a batch may exceed max_prefill_tokens (as in
		// SGLang, which only requires budget left before adding one):
		// otherwise max_prefill_tokens < chunked_prefill_size would stall
		// every prompt in between forever.
		if float64(charged+out) >= remTotal || charged > remInput && len(c.batch) > 0 || charged > remChunk {
			if c.stuck(r, rejected) {
				return c.admit(rejected) // memory changed: recompute the budgets
			}
			break
		}
		prefix, fresh, ok := c.allocPrefill(r, end)
		if !ok {
			oom = true
			if c.stuck(r, rejected) {
				return c.admit(rejected) || oom
			}
			break
		}
		c.startPrefill(r, end, prefix)
		remTotal -= float64(fresh*c.page + out)
		remInput -= charged
		remChunk -= charged
		if remChunk <= 0 {
			break
		}
	}
	return oom
}

// startPrefill takes the waiting head r into the prefill batch, to be
// computed up to end tokens over its prefix cached tokens.
func (c *SGLangCore) startPrefill(r *seq, end, prefix int) {
	p := &c.pass
	c.waiting.popFront()
	r.computed = max(end, prefix)
	computed := r.computed - prefix
	c.publish(r, prefix/c.page, r.computed/c.page)
	// An admission is reported once per request, and again after a
	// retraction (as the vLLM core reports a preempted request's). A next
	// chunk of a chunked prefill is not one: it matches the request's own
	// earlier chunks in the tree, which is not prompt served from the
	// cache (issue 30 item 6: it made the headline reuse 0.76 on a trace
	// that can reuse 0.08). The reference mocker's sglang_cache_hit_tokens
	// does count every chunk's match (mocker.md §3.5); that figure stays in
	// Counters.CacheHitTokens. (SGLang's own PrefillAdder.add_chunked_req
	// logs a next chunk with 0 hit tokens: its cache_hit_rate does not.)
	if r.fresh || r.status == preempted {
		p.Admissions = append(p.Admissions, Admission{ID: r.id, Reused: min(prefix, r.promptLen), Again: r.status == preempted})
	}
	if r.fresh {
		r.cachedPrefix, r.fresh = prefix, false
	}
	r.status = running
	r.passPrefix = prefix
	p.Counters.CacheHitTokens += prefix
	p.Counters.CacheTotalTokens += prefix + computed
	if computed > 0 {
		p.FPM.PrefillRequests++
		p.FPM.PrefillTokens += computed
		p.FPM.PrefillKVTokens += prefix
		c.prefill.add(float64(r.promptLen))
	}
	c.batch = append(c.batch, r)
}

// stuck rejects the waiting head r when it cannot be admitted although
// nothing runs and nothing was admitted in this pass: every budget is at its
// fullest and all cached memory is evictable, so it could never run (the
// reference would wait forever, blocking the queue behind it).
func (c *SGLangCore) stuck(r *seq, rejected *[]Signal) bool {
	if len(c.running) > 0 || len(c.batch) > 0 {
		return false
	}
	if c.releaseWaiting(1, math.MaxInt) {
		// Other waiting requests held pages (their chunked prefill):
		// the head gets another try with their memory evictable.
		return true
	}
	c.reject(r, rejected)
	return true
}

// reject ends the waiting head r without running it further.
func (c *SGLangCore) reject(r *seq, rejected *[]Signal) {
	c.waiting.popFront()
	c.release(r, 0)
	c.live--
	c.retire(r)
	*rejected = append(*rejected, Signal{ID: r.id, Completed: true, Rejected: true, Reason: KVCapacity, Cached: -1})
	c.pass.Busy = true
}

// releaseWaiting drops the KV holds of waiting requests from index from on,
// newest first, until pages pages are available or evictable, and reports
// whether it released any. Their cached prefix stays in the tree; each
// release counts as a retraction.
func (c *SGLangCore) releaseWaiting(from, pages int) bool {
	released := false
	for i := c.waiting.len() - 1; i >= from && c.pool.Available()+c.tree.Evictable()/c.page < pages; i-- {
		if r := c.waiting.at(i); r.locked || len(r.pages) > 0 {
			c.release(r, 0)
			r.computed = 0
			c.preemptions++
			c.pass.Counters.Retractions++
			released = true
		}
	}
	return released
}

// decode runs the decode step over the running batch (spec §3.7) and
// returns its duration.
func (c *SGLangCore) decode() timing.Time {
	burst := 1
	if c.spec != nil {
		burst = len(c.spec.rates) + 1
	}
	growth := c.sweep(burst)
	if len(c.running) == 0 || !c.makeRoom(growth, burst) {
		return 0
	}
	p := &c.pass
	n, total := len(c.running), 0
	for _, r := range c.running {
		total += r.length
		c.decodeW.add(float64(r.length))
	}
	p.FPM.DecodeRequests = n
	p.FPM.DecodeKVTokens = total
	var d timing.Time
	if c.spec != nil { // drafts and k+1 verify tokens (spec.go)
		d = c.spec.decodeTime(c.cfg.Scale, c.cfg.Model, n, total, c.total*c.page)
	} else {
		d = c.cfg.Scale.Decode(c.cfg.Model, n, total, total/n, c.total*c.page)
	}
	anyDone := c.book.decode(c.running, c.burstLimit, &p.Signals)
	c.pool.Free(c.reserve...)
	c.reserve = c.reserve[:0]
	if anyDone {
		c.running = slices.DeleteFunc(c.running, func(r *seq) bool { return r.done })
	}
	return d
}

// sweep ends the running requests with nothing left to generate and
// retracts those that can never decode again. It returns the pages the
// rest need to decode up to burst tokens each: one walk of the batch, as
// passes are many and their batches small.
func (c *SGLangCore) sweep(burst int) (growth int) {
	p := &c.pass
	keep := c.running[:0]
	for _, r := range c.running {
		switch {
		case r.remaining(0) == 0:
			p.Signals = append(p.Signals, Signal{ID: r.id, Completed: true, Cached: c.firstSignal(r)})
			c.finish(r)
		case c.room(r) < 1:
			// It outgrew the whole pool and can never decode again: it is
			// retracted, and its re-admission rejects it (as the vLLM core
			// rejects a preempted request past the pool). Kept, it stalled
			// the rank, or had a newcomer beside it retracted in every
			// pass at zero duration.
			c.retract(r)
		default:
			keep = append(keep, r)
			growth += c.growth(r, burst)
		}
	}
	c.running = keep
	return growth
}

// makeRoom sets aside the growth pages the running batch needs to decode
// a burst each (c.reserve), retracting the request with the least output
// while memory is short and more than one runs. It reports false when even
// so the room cannot be made.
func (c *SGLangCore) makeRoom(growth, burst int) bool {
	for c.pool.Available()+c.tree.Evictable()/c.page < growth && len(c.running) > 1 {
		v := 0
		for i, r := range c.running {
			if r.generated < c.running[v].generated {
				v = i
			}
		}
		r := c.running[v]
		growth -= c.growth(r, burst)
		c.running = slices.Delete(c.running, v, v+1)
		c.retract(r)
	}
	// A lone runner can still be short if waiting requests hold pages
	// (prefill chunks kept locked between passes). Release those holds,
	// newest first: their cached prefix stays in the tree, evictable, and
	// they re-match it on re-admission. Without this the runner and the
	// chunked prompt would wait on each other forever.
	if c.waiting.len() > 0 && c.pool.Available()+c.tree.Evictable()/c.page < growth {
		c.releaseWaiting(0, growth) // its own test, hoisted: most passes skip the call
	}
	if short := growth - c.pool.Available(); short > 0 {
		c.evict(short)
	}
	var ok bool
	// On failure a lone request outgrew the pool: it cannot proceed. It
	// emits nothing and is charged nothing so the driver reports it instead
	// of spinning (the reference logs and retries forever).
	c.reserve, ok = c.pool.Alloc(growth, c.reserve[:0])
	return ok
}

// burstLimit is the most tokens r may emit in one forward: what it may
// still generate, within the pool (decoding b tokens needs pages for
// length + b).
func (c *SGLangCore) burstLimit(r *seq) int { return min(r.remaining(0), c.room(r)) }

// growth is the number of pages r needs to decode up to burst tokens.
func (c *SGLangCore) growth(r *seq, burst int) int {
	return max(0, (r.length+min(burst, r.remaining(0), c.room(r))+c.page-1)/c.page-len(r.pages))
}

// room is how many more tokens r may hold within the whole pool: decoding
// b tokens needs pages for length + b. Bursts are bounded by it.
func (c *SGLangCore) room(r *seq) int {
	return c.pool.Total()*c.page - r.length
}

// retract frees r's pages beyond its cached prefix and unlocks its path,
// keeping every token: it will be re-admitted as a prefill of its whole
// sequence and usually hit its own cached prefix. It counts as a preemption.
func (c *SGLangCore) retract(r *seq) {
	c.release(r, 0)
	r.computed = 0
	r.status = preempted
	c.preemptions++
	c.pass.Counters.Retractions++
	c.retracted = append(c.retracted, r)
}
