package engine

import (
	"fmt"
	"math/rand/v2"

	"github.com/dynosim/dynosim-web/kv"
	"github.com/dynosim/dynosim-web/timing"
)

// The request book: the lifecycle both engine cores share, written once.
// It owns the request states and the sets they move through (waiting,
// running, disaggregation's pending, reserved and held), submission and
// the handoff calls, abort, first-token signalling and token emission
// (speculative bursts included). What it needs of KV memory goes through
// the narrow memory interface, with two implementations: blockMem (the
// vLLM/TensorRT-LLM block manager) and pageMem (SGLang's token pool and
// radix cache). The cores keep what really differs: admission, preemption
// or retraction, schedule order and pricing.

type status uint8

const (
	waiting status = iota
	running
	preempted // preempted (vLLM) or retracted (SGLang): queued to recompute
)

// head is the request header both cores share.
type head struct {
	id                   uint64
	promptLen, maxOutput int
	length               int // prompt + generated (known tokens)
	generated            int
	computed             int // tokens whose KV is computed (incl. cached prefix)
	planned              []uint32
	hashes               []uint64 // chained hash of every full known block
	status               status
	fresh                bool // never ran: the one-time size check applies
	signaled, done       bool
	cachedPrefix         int    // reused at the first admission
	priority             int32  // Request.Priority
	arrival              uint64 // submission order: vLLM's arrival_time tie-break (priority.go)
}

// seq is the engine's state of one request: the shared header and the
// part of the memory that holds its KV (one of the two stays zero). One
// type for both cores lets the book own the lifecycle without generics or
// per-call conversions on the per-token path.
type seq struct {
	head
	blockPart
	pagePart
}

// blockPart is a request's state under the block manager (Core).
type blockPart struct {
	admitCached int // reused at the latest admission
	preemptions int
	locals      []uint64 // local hash of every full known block
	hasher      kv.Hasher
	lease       kv.Lease
	pass        uint64 // last pass that scheduled it
	onboardFrom int    // parked: the lease's blocks [onboardFrom, onboardTo) are arriving
	onboardTo   int
	passTokens  int // tokens scheduled in that pass
	passPrompt  int // prompt tokens of that pass
	passPre     int // prefix of that pass
}

// pagePart is a request's state under the token pool and radix cache
// (SGLangCore).
type pagePart struct {
	partial    []uint32 // tokens of the trailing partial page
	keys       []uint64 // page identity (local hash) of every full page
	pages      []int32  // pages held: allocated = len(pages) × page
	cached     int      // leading pages owned by the tree, locked via node
	node       int32
	locked     bool
	lpmPrefix  int
	lpmDepri   bool
	passPrefix int // prefix of its prefill item in this pass
}

func (s *seq) complete(maxModelLen int) bool {
	return s.generated >= s.maxOutput || (maxModelLen > 0 && s.length >= maxModelLen)
}

// remaining is how many more tokens s may generate.
func (s *seq) remaining(maxModelLen int) int {
	r := s.maxOutput - s.generated
	if maxModelLen > 0 {
		r = min(r, maxModelLen-s.length)
	}
	return max(r, 0)
}

func (s *seq) knownBlocks(bs int) int { return (s.length + bs - 1) / bs }

// memory is what the book needs of the KV memory that holds its requests.
type memory interface {
	// index records the identity of the prompt's full blocks (for prefix
	// matching and KV events) when s is created from r.
	index(s *seq, r *Request)
	// reservePrompt matches s's cached prefix and reserves room for its
	// whole prompt (a handoff destination); it returns the prefix in tokens.
	reservePrompt(s *seq) (prefix int, ok bool)
	// fillPrompt makes a reserved prompt's KV computed (its transfer ended).
	fillPrompt(s *seq)
	// grow takes one emitted token tok (s.length already counts it).
	grow(s *seq, tok uint32)
	// settle closes a burst that started at length before: the KV it
	// computed becomes findable, unused reserved room goes back.
	settle(s *seq, before int, done bool)
	// keep caches s's computed KV when it leaves the running batch.
	keep(s *seq)
	// drop gives back everything s holds (cached blocks stay cached).
	drop(s *seq)
}

// book is the request book of one core.
type book struct {
	cfg Config
	mem memory
	// mem as its concrete type, the other nil: the per-token calls test
	// a pointer, cheaper than a type switch, and still inline.
	pages   *pageMem
	blocks  *blockMem
	rng     *rand.PCG    // output-token stream
	spec    *sampler     // nil without speculation
	events  *kv.EventLog // nil: KV events off
	clampTo int          // > 0: outputs clamped to fit this many tokens (TensorRT-LLM)

	waiting    deque[*seq]
	running    []*seq
	live       int    // requests held
	arrivals   uint64 // requests submitted or reserved so far
	free, dead []*seq // recycled request states; dead ones free up after the pass

	// disaggregation (handoff.go): reservations waiting for room, granted
	// ones waiting for their KV, and finished prefills holding theirs
	pending         deque[*seq]
	reserved, holds []*seq

	preemptions int      // cumulative; includes SGLang retractions
	counters    Counters // cumulative
	pass        Pass
	watched     Watched // Pass.Watched points here
}

func newBook(cfg Config, mem memory) (book, error) {
	spec, err := newSampler(cfg.Spec, cfg.Seed)
	if err != nil {
		return book{}, err
	}
	b := book{cfg: cfg, mem: mem, spec: spec, rng: rand.NewPCG(cfg.Seed, 0x6f7574707574)} // "output"
	switch m := mem.(type) {
	case *pageMem:
		b.pages = m
	case *blockMem:
		b.blocks = m
	default:
		return book{}, fmt.Errorf("engine: memory %T has no per-token path", mem)
	}
	if cfg.Policy == TRTLLM {
		b.clampTo = cfg.NumBlocks * cfg.BlockSize
	}
	return b, nil
}

// Config returns the core's config.
func (b *book) Config() Config { return b.cfg }

// Empty reports whether the core holds no requests and no source holds.
func (b *book) Empty() bool { return b.live == 0 && len(b.holds) == 0 }

// Len is the number of requests the core holds.
func (b *book) Len() int { return b.live }

// Submit enqueues a request at the tail of the waiting queue. Request ids
// must be unique among the requests the core holds.
func (b *book) Submit(r Request) error {
	s, err := b.initSeq(r)
	if err != nil {
		return err
	}
	b.live++
	if b.cfg.PriorityScheduling {
		b.enqueue(s)
		return nil
	}
	b.waiting.pushBack(s)
	return nil
}

// initSeq returns the state of a new request.
func (b *book) initSeq(r Request) (*seq, error) {
	if r.MaxOutput < 0 {
		return nil, fmt.Errorf("request %d: max output must be ≥ 0, got %d", r.ID, r.MaxOutput)
	}
	s := b.newSeq()
	s.id, s.promptLen, s.maxOutput, s.length = r.ID, len(r.Prompt), r.MaxOutput, len(r.Prompt)
	s.fresh, s.planned = true, r.Planned
	b.arrivals++
	s.priority, s.arrival = r.Priority, b.arrivals
	if r.Planned != nil {
		s.maxOutput = len(r.Planned)
	}
	// GUARANTEED_NO_EVICT clamps the output at enqueue so the admission
	// reservation can be met; oversized prompts are rejected later.
	if b.clampTo > 0 && s.promptLen < b.clampTo {
		s.maxOutput = min(s.maxOutput, b.clampTo-s.promptLen)
	}
	b.mem.index(s, &r)
	return s, nil
}

// newSeq returns a cleared request state, reusing the buffers of a finished
// one when it can: a replay then allocates per concurrent request, not per
// request, which matters most under wasm's single-threaded GC.
func (b *book) newSeq() *seq {
	n := len(b.free)
	if n == 0 {
		return &seq{blockPart: blockPart{hasher: kv.Hasher{BlockSize: b.cfg.BlockSize}}}
	}
	old := b.free[n-1]
	b.free[n-1] = nil
	b.free = b.free[:n-1]
	hashes, locals, lease, hasher := old.hashes[:0], old.locals[:0], old.lease, old.hasher
	hasher.Reset()
	*old = seq{head: head{hashes: hashes}, blockPart: blockPart{locals: locals, lease: lease, hasher: hasher}}
	return old
}

// retire hands a finished request's state to newSeq once the pass is over.
func (b *book) retire(s *seq) { b.dead = append(b.dead, s) }

// recycle ends a pass: the states retired in it may be reused.
func (b *book) recycle() {
	if len(b.dead) == 0 {
		return // most passes end nothing: skip the copy
	}
	b.free = append(b.free, b.dead...)
	clear(b.dead)
	b.dead = b.dead[:0]
}

// metrics is the core's load; active is its busy KV and parked the
// requests set aside outside the waiting queue.
func (b *book) metrics(active, parked int) Metrics {
	var m Metrics
	b.metricsInto(&m, active, parked)
	return m
}

// metricsInto writes the core's load into m in place: a pass fills its
// own Metrics so, passes being many, the struct is not built then copied.
func (b *book) metricsInto(m *Metrics, active, parked int) {
	m.Running = len(b.running) + len(b.reserved)
	m.Waiting = b.waiting.len() + b.pending.len() + parked
	m.ActiveBlocks = active
	m.TotalBlocks = b.cfg.NumBlocks
	m.Preemptions = b.preemptions
	m.Holds = len(b.holds)
	m.Reserved = b.pending.len() + len(b.reserved)
	// Field by field: a struct copy reads b.counters in 16-byte loads
	// right after add's 8-byte stores, and stalled on store forwarding
	// every pass (issue 34 item 1).
	c := &b.counters
	m.CacheHitTokens, m.CacheTotalTokens, m.Retractions = c.CacheHitTokens, c.CacheTotalTokens, c.Retractions
	m.AcceptedTokens, m.DecodeForwards = c.AcceptedTokens, c.DecodeForwards
}

// begin resets the pass for a Step starting at now.
func (b *book) begin(now timing.Time) *Pass {
	// Field by field: a composite literal over the whole struct, which
	// holds pointers, is built aside and copied with write barriers, a
	// cost that showed per pass (issue 34 item 1).
	p := &b.pass
	p.Start, p.End = now, 0
	p.Signals, p.Admissions, p.Events, p.Reserved = p.Signals[:0], p.Admissions[:0], nil, p.Reserved[:0]
	p.FPM, p.Metrics, p.Counters = FPM{}, Metrics{}, Counters{}
	p.Busy, p.Watched = false, nil
	return p
}

// watch publishes what the pass did for the watched request (Config.Watch)
// as Pass.Watched, stamped with the rank.
func (b *book) watch(w Watched) {
	w.Rank = b.cfg.DPRank
	b.watched = w
	b.pass.Watched = &b.watched
}

// firstSignal is the Cached field of s's next signal: its cached prefix
// on the first, -1 after.
func (b *book) firstSignal(s *seq) int {
	if s.signaled {
		return -1
	}
	s.signaled = true
	return s.cachedPrefix
}

// decode runs one decode forward of every request in batch (spec §2.6),
// appending the signals to out: one token each, or under speculation a
// burst of up to limit(s) tokens (§2.7). It reports whether any request
// finished (the caller drops the done ones from its running set).
// One loop over the batch, not a call per request: passes are many and
// short, so per-request overhead shows in a replay's time.
func (b *book) decode(batch []*seq, limit func(*seq) int, out *[]Signal) (anyDone bool) {
	sigs := *out
	for _, s := range batch {
		n := 1
		if b.spec != nil {
			n = b.spec.burst(limit(s))
		}
		before, done := s.length, false
		for range n {
			var tok uint32 // the planned token, or one from the output stream
			if s.planned != nil {
				tok = s.planned[s.generated]
			} else {
				tok = uint32(b.rng.Uint64())
			}
			s.length++
			s.generated++
			// The per-token call, devirtualized for the two memories so
			// that it inlines (as settle below).
			if b.pages != nil {
				b.pages.grow(s, tok)
			} else {
				b.blocks.grow(s, tok)
			}
			done = s.complete(b.cfg.MaxModelLen)
			sig := Signal{ID: s.id, Token: tok, HasToken: true, Completed: done, Cached: b.firstSignal(s)}
			if h := b.cfg.Prefill; h != nil && done {
				sig.HandoffMs = h.DelayMs(s.promptLen)
			}
			sigs = append(sigs, sig)
			if done {
				break
			}
		}
		b.pass.Counters.AcceptedTokens += s.length - before
		b.pass.Counters.DecodeForwards++
		if b.pages != nil {
			b.pages.settle(s, before, done)
		} else {
			b.blocks.settle(s, before, done)
		}
		if done {
			b.finish(s)
			anyDone = true
		}
	}
	*out = sigs
	return anyDone
}

// finish ends s: its computed KV is cached and the rest freed, unless a
// prefill worker holds it until Release.
func (b *book) finish(s *seq) {
	b.mem.keep(s)
	s.done = true
	b.live--
	if h := b.cfg.Prefill; h != nil && h.Hold {
		b.holds = append(b.holds, s) // the source keeps its KV until Release
		return
	}
	b.mem.drop(s)
	b.retire(s)
}

// queued counts the waiting queue and then more into the pass's FPM: a
// preempted or retracted request as queued decode work. Small enough to
// inline, so that the many passes with nothing queued skip the call.
func (b *book) queued(f *FPM, more []*seq) {
	if b.waiting.len()+len(more) > 0 {
		b.countQueued(f, more)
	}
}

func (b *book) countQueued(f *FPM, more []*seq) {
	for _, s := range b.waiting.items() {
		f.queue(s)
	}
	for _, s := range more {
		f.queue(s)
	}
}

func (f *FPM) queue(s *seq) {
	if s.status == preempted {
		f.QueuedDecode++
		f.QueuedDecodeKVTokens += s.length
	} else {
		f.QueuedPrefill++
		f.QueuedPrefillTokens += s.promptLen
	}
}
