package engine

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/dynosim/dynosim-web/kv"
	"github.com/dynosim/dynosim-web/timing"
)

// SchedulePolicy orders the SGLang waiting queue.
type SchedulePolicy uint8

const (
	FCFS SchedulePolicy = iota // arrival order ("fifo")
	LPM                        // longest cached prefix first, duplicates last
)

// SGLangConfig holds the SGLang core's knobs (spec §3.1); the page size is
// Config.BlockSize. Zero budgets take the reference defaults; an all-zero
// SGLangConfig is DefaultSGLang().
type SGLangConfig struct {
	Schedule           SchedulePolicy
	MaxPrefillTokens   int     // per-pass prefill token budget (16384)
	ChunkedPrefillSize int     // per-pass chunk budget (8192)
	ClipMaxNewTokens   int     // cap on the output reserved per request (4096)
	Conservativeness   float64 // scales the new-token ratio, in [0, 1] (1)
}

// DefaultSGLang returns the reference defaults.
func DefaultSGLang() SGLangConfig {
	return SGLangConfig{MaxPrefillTokens: 16384, ChunkedPrefillSize: 8192, ClipMaxNewTokens: 4096, Conservativeness: 1}
}

func (c SGLangConfig) withDefaults() SGLangConfig {
	if c == (SGLangConfig{}) {
		return DefaultSGLang()
	}
	d := DefaultSGLang()
	if c.MaxPrefillTokens <= 0 {
		c.MaxPrefillTokens = d.MaxPrefillTokens
	}
	if c.ChunkedPrefillSize <= 0 {
		c.ChunkedPrefillSize = d.ChunkedPrefillSize
	}
	if c.ClipMaxNewTokens <= 0 {
		c.ClipMaxNewTokens = d.ClipMaxNewTokens
	}
	return c
}

func (c *Config) validateSGLang() error {
	sg := c.SGLang.withDefaults()
	switch {
	case sg.ChunkedPrefillSize%c.BlockSize != 0:
		return fieldErr("sglang.chunked_prefill_size", "must be a multiple of kv_cache.block_size (the page size, %d), got %d", c.BlockSize, sg.ChunkedPrefillSize)
	case math.IsNaN(sg.Conservativeness) || sg.Conservativeness < 0 || sg.Conservativeness > 1:
		return fieldErr("sglang.schedule_conservativeness", "must be in [0, 1], got %v", sg.Conservativeness)
	}
	return nil
}

// Constants of the reference scheduler (spec §3.1, §3.6).
const (
	lpmMaxWaiting   = 128 // LPM falls back to FIFO above this many waiting
	lpmDupThreshold = 32  // tokens: short-prefix duplicates are deprioritized
)

// sgReq is the SGLang core's state of one request.
type sgReq struct {
	id                uint64
	promptLen         int
	maxOutput         int
	length, generated int
	planned           []uint32
	partial           []uint32 // tokens of the trailing partial page
	keys              []uint64 // page identity (local hash) of every full page
	hashes            []uint64 // chained block hash of every full page (events only)
	materialized      int      // tokens with KV
	pages             []int32  // pages held: allocated = len(pages) × page
	cached            int      // leading pages owned by the tree, locked via node
	node              int32
	locked            bool
	fresh, retracted  bool
	cachedPrefix      int
	signaled, done    bool
	lpmPrefix         int
	lpmDepri          bool
	passPrefix        int // prefix of its prefill item in this pass
}

func (r *sgReq) remaining() int { return max(r.maxOutput-r.generated, 0) }

// SGLangCore is the SGLang-shaped scheduler of one data-parallel rank
// (spec §3): a token pool of pages with a radix prefix cache, a prefill
// batch then a decode step in every pass, and retraction (recompute with the
// cached prefix kept) instead of preemption.
//
// Costs: a pass is O(batch + pages touched); a prefix lookup walks the
// request's pages once (O(prompt pages)); eviction is O(log nodes) per leaf.
type SGLangCore struct {
	cfg   Config
	sg    SGLangConfig
	page  int
	pool  *kv.PagePool
	tree  *kv.Radix
	rng   *rand.PCG
	spec  *sampler
	total int // pages

	events *kv.EventLog // the pool's KV events (nil: off), drained every pass

	waiting deque[*sgReq]
	running []*sgReq
	live    int

	// disaggregation (sglang_handoff.go), as in Core
	pending         deque[*sgReq]
	reserved, holds []*sgReq

	ratio, initRatio, minRatio, decay float64
	preemptions                       int
	counters                          Counters

	pass      Pass
	watched   Watched // Pass.Watched points here
	batch     []*sgReq
	retracted []*sgReq
	reserve   []int32
	scratch   []int32
	lpmSeen   map[uint64]bool
	prefill   welford
	decodeW   welford
}

// NewSGLang returns an SGLang core.
func NewSGLang(cfg Config) (*SGLangCore, error) {
	cfg.Policy = SGLang
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	sg := cfg.SGLang.withDefaults()
	c := &SGLangCore{
		cfg:   cfg,
		sg:    sg,
		page:  cfg.BlockSize,
		total: cfg.NumBlocks,
		pool:  kv.NewPagePool(cfg.NumBlocks),
		tree:  kv.NewRadix(cfg.BlockSize),
		rng:   rand.NewPCG(cfg.Seed, 0x6f7574707574), // "output"
	}
	var err error
	if c.spec, err = newSampler(cfg.Spec, cfg.Seed); err != nil {
		return nil, err
	}
	c.initRatio = float64(0.7 * sg.Conservativeness)
	c.minRatio = float64(c.initRatio * 0.14)
	c.decay = (c.initRatio - c.minRatio) / 600
	c.ratio = c.initRatio
	if cfg.Events && cfg.PrefixCaching {
		c.events = &kv.EventLog{DPRank: cfg.DPRank}
		// With page size 1 the page keys are the tokens (addPage).
		c.pool.Publish(c.events, cfg.BlockSize == 1)
	}
	return c, nil
}

// Config returns the core's config.
func (c *SGLangCore) Config() Config { return c.cfg }

// Empty implements Rank.
func (c *SGLangCore) Empty() bool { return c.live == 0 && len(c.holds) == 0 }

// Submit implements Rank.
func (c *SGLangCore) Submit(q Request) error {
	r, err := c.initReq(q)
	if err != nil {
		return err
	}
	c.live++
	c.waiting.pushBack(r)
	return nil
}

// initReq returns the state of a new request.
func (c *SGLangCore) initReq(q Request) (*sgReq, error) {
	if q.MaxOutput < 0 {
		return nil, fmt.Errorf("request %d: max output must be ≥ 0, got %d", q.ID, q.MaxOutput)
	}
	r := &sgReq{
		id: q.ID, promptLen: len(q.Prompt), maxOutput: q.MaxOutput, length: len(q.Prompt),
		planned: q.Planned, node: kv.RadixRoot, fresh: true,
	}
	if q.Planned != nil {
		r.maxOutput = len(q.Planned)
	}
	n := len(q.Prompt) / c.page
	// Room for the whole sequence up front: prompts are long and outputs
	// grow these one page at a time.
	full := (len(q.Prompt) + r.maxOutput + c.page - 1) / c.page
	r.keys = make([]uint64, 0, full)
	// r.pages is allocated at the first prefill (allocPrefill): a backlog of
	// waiting prompts then holds only their keys.
	if c.page == 1 && c.events == nil {
		for _, t := range q.Prompt {
			r.keys = append(r.keys, uint64(t))
		}
	} else {
		for i := range n {
			c.addPage(r, q.Prompt[i*c.page:(i+1)*c.page])
		}
	}
	r.partial = append(make([]uint32, 0, c.page), q.Prompt[n*c.page:]...)
	return r, nil
}

// addPage appends the identity of a full page of r's sequence: the local
// hash of its tokens, as in the reference, except with page size 1, where
// the token itself is an exact identity and hashing every prompt token
// would dominate the run (events still carry the local hash).
func (c *SGLangCore) addPage(r *sgReq, toks []uint32) {
	var l uint64
	if c.page == 1 {
		r.keys = append(r.keys, uint64(toks[0]))
		if c.events == nil {
			return
		}
		l = kv.LocalHash(toks)
	} else {
		l = kv.LocalHash(toks)
		r.keys = append(r.keys, l)
	}
	if c.events != nil {
		h := l
		if n := len(r.hashes); n > 0 {
			h = kv.ChainHash(r.hashes[n-1], l)
		}
		r.hashes = append(r.hashes, h)
	}
}

// Metrics implements Rank. As in the reference, pages cached in the tree
// count as used: active = pages not free.
func (c *SGLangCore) Metrics() Metrics {
	return Metrics{
		Running:      len(c.running) + len(c.reserved),
		Waiting:      c.waiting.len() + c.pending.len(),
		ActiveBlocks: c.total - c.pool.Available(),
		TotalBlocks:  c.total,
		Preemptions:  c.preemptions,
		Holds:        len(c.holds),
		Reserved:     c.pending.len() + len(c.reserved),
		Counters:     c.counters,
	}
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

func (c *SGLangCore) state(r *sgReq, running bool) SGLangState {
	return SGLangState{Materialized: r.materialized, Allocated: len(r.pages) * c.page, Generated: r.generated,
		Length: r.length, Running: running, Retracted: r.retracted}
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
	p := &c.pass
	*p = Pass{Start: now, Signals: p.Signals[:0], Admissions: p.Admissions[:0], Reserved: p.Reserved[:0]}
	c.batch, c.retracted = c.batch[:0], c.retracted[:0]
	c.prefill, c.decodeW = welford{}, welford{}
	if c.pending.len() > 0 {
		c.grantReservations()
	}

	if c.sg.Schedule == LPM {
		c.sortLPM()
	}
	var rejected []Signal
	if c.admit(&rejected) {
		c.ratio = c.initRatio
	}
	var prefill timing.Time
	if n := len(c.batch); n > 0 && !c.cfg.Decode { // a decode worker's recompute is free
		sumEnd, sumPrefix := 0, 0
		for _, r := range c.batch {
			sumEnd += r.materialized
			sumPrefix += r.passPrefix
		}
		prefill = c.cfg.Scale.Prefill(c.cfg.Model, n, sumEnd/n, sumPrefix/n)
	}
	// Prompts now fully materialized run; partial chunks cache their
	// page-aligned prefix (kept locked) and go back to the front.
	for i := len(c.batch) - 1; i >= 0; i-- {
		if r := c.batch[i]; r.materialized < r.length {
			c.cacheUpTo(r, r.materialized/c.page)
			c.waiting.pushFront(r)
		}
	}
	for _, r := range c.batch {
		if r.materialized == r.length {
			c.running = append(c.running, r)
		}
	}
	decode := c.decode()
	for i := len(c.retracted) - 1; i >= 0; i-- {
		c.waiting.pushFront(c.retracted[i])
	}
	if len(c.retracted) > 0 {
		c.ratio = c.initRatio
	}
	c.ratio = max(c.ratio-c.decay, c.minRatio)

	p.Signals = append(p.Signals, rejected...)
	p.End = now + min(prefill+decode, timing.Horizon) // saturated: the replay stops at the horizon
	if c.events != nil {
		c.pool.Flush()
		p.Events = c.events.Drain()
	}
	f := &p.FPM
	f.VarPrefillLength = c.prefill.variance()
	f.VarDecodeKVTokens = c.decodeW.variance()
	for _, r := range c.waiting.items() {
		if r.retracted {
			f.QueuedDecode++
			f.QueuedDecodeKVTokens += r.length
		} else {
			f.QueuedPrefill++
			f.QueuedPrefillTokens += r.promptLen
		}
	}
	f.WallTimeSecs = (p.End - now).Ms() / 1000
	if c.cfg.Watch != 0 {
		c.watch(p)
	}
	c.counters.add(p.Counters)
	p.Metrics = c.Metrics()
	p.Busy = p.Busy || len(p.Signals) > 0 || len(c.batch) > 0 || len(c.retracted) > 0 || decode > 0 || len(p.Reserved) > 0
	return p
}

func (c *SGLangCore) ceilPage(tokens int) int { return (tokens + c.page - 1) / c.page * c.page }

// sortLPM applies the longest-prefix-match policy (spec §3.6): longer cached
// prefix first, and requests that duplicate an earlier waiting request's
// first 32 tokens without a cached prefix last, so one of them warms the
// cache for the others.
func (c *SGLangCore) sortLPM() {
	w := c.waiting.items()
	if len(w) > lpmMaxWaiting || len(w) < 2 {
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
	slices.SortStableFunc(w, func(a, b *sgReq) int {
		if a.lpmDepri != b.lpmDepri {
			if a.lpmDepri {
				return 1
			}
			return -1
		}
		return cmp.Compare(b.lpmPrefix, a.lpmPrefix)
	})
}

// admit forms the prefill batch (spec §3.5). It reports whether an
// allocation failed (out of memory).
func (c *SGLangCore) admit(rejected *[]Signal) (oom bool) {
	p := &c.pass
	reserved := 0.0
	for _, r := range c.running {
		reserved += float64(float64(min(r.remaining(), c.sg.ClipMaxNewTokens)) * c.ratio)
	}
	remTotal := float64((c.pool.Available()*c.page)+c.tree.Evictable()) - reserved
	remInput, remChunk := c.sg.MaxPrefillTokens, c.sg.ChunkedPrefillSize
	slots := math.MaxInt
	if c.cfg.MaxSeqs > 0 {
		slots = c.cfg.MaxSeqs - len(c.running)
	}
	for len(c.batch) < slots && c.waiting.len() > 0 {
		r := c.waiting.front()
		if !r.fresh && r.remaining() > 0 && c.room(r) < 1 {
			// It could never decode again (it outgrew the pool while
			// running: see decode). A fresh prompt past the pool is the
			// reference's chunked case (S3) and meets stuck instead.
			c.reject(r, rejected)
			continue
		}
		extend := r.length - r.materialized
		if extend == 0 {
			// An empty prompt: nothing to prefill, it decodes at once.
			c.waiting.popFront()
			r.fresh, r.passPrefix = false, 0
			p.Admissions = append(p.Admissions, Admission{ID: r.id, Again: r.retracted})
			c.batch = append(c.batch, r)
			continue
		}
		chunk := extend
		if extend > c.sg.ChunkedPrefillSize {
			if chunk = remChunk / c.page * c.page; chunk <= 0 {
				break
			}
			chunk = min(chunk, extend)
		}
		charged := c.ceilPage(chunk)
		end := r.materialized + chunk
		out := 0
		if end == r.length {
			out = min(r.remaining(), c.sg.ClipMaxNewTokens)
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
		c.waiting.popFront()
		r.materialized = max(end, prefix)
		computed := r.materialized - prefix
		c.publish(r, prefix/c.page, r.materialized/c.page)
		p.Admissions = append(p.Admissions, Admission{ID: r.id, Reused: prefix, Again: r.retracted})
		if r.fresh {
			r.cachedPrefix, r.fresh = prefix, false
		}
		r.retracted = false
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
		remTotal -= float64(fresh*c.page + out)
		remInput -= charged
		remChunk -= charged
		if remChunk <= 0 {
			break
		}
	}
	return oom
}

// stuck rejects the waiting head r when it cannot be admitted although
// nothing runs and nothing was admitted in this pass: every budget is at its
// fullest and all cached memory is evictable, so it could never run (the
// reference would wait forever, blocking the queue behind it).
func (c *SGLangCore) stuck(r *sgReq, rejected *[]Signal) bool {
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
func (c *SGLangCore) reject(r *sgReq, rejected *[]Signal) {
	c.waiting.popFront()
	c.release(r, 0)
	c.live--
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
			r.materialized = 0
			c.preemptions++
			c.pass.Counters.Retractions++
			released = true
		}
	}
	return released
}

// allocPrefill extends r's cached prefix as far as the tree allows and
// allocates pages up to end tokens. It returns the prefix (tokens already
// materialized or cached) and the number of fresh pages.
//
// Every prefill round matches the whole cached prefix from where r's cached
// pages end, so a prompt whose cached prefix is longer than one chunk, or
// that became cached while r was between chunks, does not recompute it
// (the reference matches only on the first chunk and only up to its end:
// SGLang issue 13188).
func (c *SGLangCore) allocPrefill(r *sgReq, end int) (prefix, fresh int, ok bool) {
	if r.pages == nil {
		// Room for the whole sequence: outputs grow it one page at a time.
		r.pages = make([]int32, 0, (r.promptLen+r.maxOutput+c.page-1)/c.page+1)
	}
	wasFresh := r.materialized == 0 && len(r.pages) == 0
	if r.cached*c.page == r.materialized && len(r.pages) == r.cached && r.cached < len(r.keys) {
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
	prefix = max(r.materialized, r.cached*c.page)
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
func (c *SGLangCore) cacheUpTo(r *sgReq, full int) {
	if full <= r.cached {
		return
	}
	disp := c.scratch[:0]
	var end int32
	spare := (r.remaining() + c.page - 1) / c.page // decode extends the leaf in place
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
func (c *SGLangCore) release(r *sgReq, keep int) {
	from := max(r.cached, keep)
	c.pool.Free(r.pages[from:]...)
	r.pages = r.pages[:0]
	if r.locked {
		c.tree.Unlock(r.node)
	}
	r.node, r.locked, r.cached = kv.RadixRoot, false, 0
}

// decode runs the decode step over the running batch (spec §3.7) and
// returns its duration.
func (c *SGLangCore) decode() timing.Time {
	p := &c.pass
	keep := c.running[:0]
	for _, r := range c.running {
		switch {
		case r.remaining() == 0:
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
		}
	}
	c.running = keep
	if len(c.running) == 0 {
		return 0
	}
	burst := 1
	if c.spec != nil {
		burst = len(c.spec.rates) + 1
	}
	growth := 0
	for _, r := range c.running {
		growth += c.growth(r, burst)
	}
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
	c.releaseWaiting(0, growth)
	if short := growth - c.pool.Available(); short > 0 {
		c.evict(short)
	}
	var ok bool
	if c.reserve, ok = c.pool.Alloc(growth, c.reserve[:0]); !ok {
		// A lone request that outgrew the pool: it cannot proceed. Emit
		// nothing and charge nothing so the driver reports it instead of
		// spinning (the reference logs and retries forever).
		return 0
	}
	n, total := len(c.running), 0
	for _, r := range c.running {
		total += r.length
		c.decodeW.add(float64(r.length))
	}
	p.FPM.DecodeRequests = n
	p.FPM.DecodeKVTokens = total
	d := c.cfg.Scale.Decode(c.cfg.Model, n, total, total/n, c.total*c.page)
	anyDone := false
	for _, r := range c.running {
		b := 1
		if c.spec != nil {
			b = c.spec.burst(min(r.remaining(), c.room(r)))
		}
		full, before := len(r.keys), r.length
		done := false
		for range b {
			if r.length+1 > len(r.pages)*c.page {
				r.pages = append(r.pages, c.reserve[len(c.reserve)-1])
				c.reserve = c.reserve[:len(c.reserve)-1]
			}
			var tok uint32
			if r.planned != nil {
				tok = r.planned[r.generated]
			} else {
				tok = uint32(c.rng.Uint64())
			}
			r.length++
			r.generated++
			r.materialized++
			r.partial = append(r.partial, tok)
			if len(r.partial) == c.page {
				c.addPage(r, r.partial)
				r.partial = r.partial[:0]
			}
			done = r.generated >= r.maxOutput
			sig := Signal{ID: r.id, Token: tok, HasToken: true, Completed: done, Cached: c.firstSignal(r)}
			if h := c.cfg.Prefill; h != nil && done {
				sig.HandoffMs = h.DelayMs(r.promptLen)
			}
			p.Signals = append(p.Signals, sig)
			if done {
				break
			}
		}
		p.Counters.AcceptedTokens += r.length - before
		p.Counters.DecodeForwards++
		c.publish(r, full, len(r.keys))
		if done {
			c.finish(r)
			anyDone = true
		} else {
			c.cacheUpTo(r, len(r.keys))
		}
	}
	c.pool.Free(c.reserve...)
	c.reserve = c.reserve[:0]
	if anyDone {
		c.running = slices.DeleteFunc(c.running, func(r *sgReq) bool { return r.done })
	}
	return d
}

// growth is the number of pages r needs to decode up to burst tokens.
func (c *SGLangCore) growth(r *sgReq, burst int) int {
	return max(0, (r.length+min(burst, r.remaining(), c.room(r))+c.page-1)/c.page-len(r.pages))
}

// room is how many more tokens r may hold within the whole pool: decoding
// b tokens needs pages for length + b. Bursts are bounded by it.
func (c *SGLangCore) room(r *sgReq) int {
	return c.pool.Total()*c.page - r.length
}

// retract frees r's pages beyond its cached prefix and unlocks its path,
// keeping every token: it will be re-admitted as a prefill of its whole
// sequence and usually hit its own cached prefix. It counts as a preemption.
func (c *SGLangCore) retract(r *sgReq) {
	c.release(r, 0)
	r.materialized = 0
	r.retracted = true
	c.preemptions++
	c.pass.Counters.Retractions++
	c.retracted = append(c.retracted, r)
}

// finish caches r's full pages in the tree (duplicates are freed), frees
// its trailing partial page and unlocks its path (spec §3.8).
func (c *SGLangCore) finish(r *sgReq) {
	c.cacheUpTo(r, min(len(r.keys), r.materialized/c.page))
	r.done = true
	c.live--
	if h := c.cfg.Prefill; h != nil && h.Hold {
		c.holds = append(c.holds, r) // locked and unevictable until Release
		return
	}
	c.release(r, r.cached)
}

func (c *SGLangCore) firstSignal(r *sgReq) int {
	if r.signaled {
		return -1
	}
	r.signaled = true
	return r.cachedPrefix
}

// publish records that pages [from, to) of r hold full, computed pages
// (spec §3.9): the pool publishes the hashes that became visible.
func (c *SGLangCore) publish(r *sgReq, from, to int) {
	c.pool.Store(r.pages, r.hashes, r.keys, from, to)
}

// evict frees pages pages from the tree's least recently used leaves.
func (c *SGLangCore) evict(pages int) {
	freed := c.tree.Evict(pages, c.scratch[:0])
	c.pool.Free(freed...)
	c.scratch = freed[:0]
}

// watch fills p.Watched for the watched request: its prefill chunk, its
// decode tokens (the signals it got) and a retraction. Only runs that
// watch a request pay for the scan.
func (c *SGLangCore) watch(p *Pass) {
	w := Watched{Rank: c.cfg.DPRank}
	for _, s := range p.Signals {
		if s.ID == c.cfg.Watch && s.HasToken {
			w.In = true
			w.DecodeTokens++
		}
	}
	for _, r := range c.batch {
		if r.id == c.cfg.Watch {
			// A prompt completed here has decoded too: those tokens are
			// materialized but not part of the chunk.
			w.In, w.PrefillTokens = true, r.materialized-r.passPrefix-w.DecodeTokens
		}
	}
	for _, r := range c.retracted {
		w.Preempted = w.Preempted || r.id == c.cfg.Watch
	}
	if !w.In && !w.Preempted {
		return
	}
	if w.In {
		// The decodes, and the chunks still short of their prompt (a
		// prompt that completed decodes in the same pass).
		w.Batch = p.FPM.DecodeRequests
		for _, r := range c.batch {
			if r.materialized < r.length {
				w.Batch++
			}
		}
	}
	c.watched = w
	p.Watched = &c.watched
}
