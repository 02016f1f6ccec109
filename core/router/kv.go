package router

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/dynosim/dynosim-web/internal/idmap"
	"github.com/dynosim/dynosim-web/kv"
	"github.com/dynosim/dynosim-web/timing"
)

// KVConfig configures the KV-aware router.
type KVConfig struct {
	Cost      CostConfig
	BlockSize int         // the engine's block (page) size: what the router hashes
	Seed      uint64      // the router's stream (ties, softmax draws)
	UseEvents bool        // false: approximate mode, the router remembers its own placements
	TTL       timing.Time // approximate mode: how long a placement is remembered
	// Queue: with Threshold > 0 a (worker, rank) is busy while its active
	// prefill tokens exceed Threshold × MaxBatchedTokens, and a request
	// waits in the router while every one is busy (spec §8.6).
	Threshold        float64
	MaxBatchedTokens int    // the engine's; 0: no limit (10 M, as the reference)
	QueuePolicy      string // fcfs | lcfs | wspt (spec §10.11)
	// PrefillMs, if set, is the prefill load model "aic": the predicted
	// prefill time of an isl-token prompt with cached tokens reused. The
	// oldest active prefill of each (worker, rank) then decays over its
	// predicted time instead of counting whole until its first token.
	PrefillMs func(isl, cached int) float64
}

// KV is Dynamo's KV-aware router in process (spec §8.6): an indexer fed by
// the workers' KV events (or, approximately, by its own placements), an
// active-sequence tracker (uncached prefill tokens until the first token,
// prompt blocks until completion), and the cost function of §8.7 over
// every (worker, rank).
type KV struct {
	cfg  KVConfig
	idx  *Indexer
	rng  *rand.Rand
	load [][]rankLoad // by worker, rank
	// active: request id → its index in seqs (a Go map of pointers was
	// 0.1 s of 8 benchmark replays, and an allocation per placement)
	active idmap.Map
	seqs   []activeSeq
	free   []int32              // unused indices of seqs
	queued map[uint64]queuedSeq // held requests: what the queue orders by
	ranked int                  // held requests with a priority or strict priority
	busy   int                  // prefill tokens above which a (worker, rank) is busy
	// scratch, reused per placement
	hashes []uint64
	locals []uint64 // the local hashes beside hashes, for PromptHashes
	cands  []Candidate
	costs  []float64
	runs   []rankRuns // per candidate, this placement's walks
}

// rankRuns is what a placement walked on one (worker, rank): a held
// request offered again reuses them while the rank's generation holds.
type rankRuns struct {
	gen                         uint64
	worker, rank                int
	overlap, shared, host, disk int
}

// rankLoad is what the router tracks on one (worker, rank).
type rankLoad struct {
	prefill  int         // uncached prompt tokens of requests not prefill-complete
	requests int         // active requests
	pending  []uint64    // aic: requests with prefill left, oldest first
	since    timing.Time // aic: when the oldest began to decay
}

type queuedSeq struct {
	isl, cached int
	hashes      []uint64   // its prompt's block hashes, reused when it is offered again
	locals      []uint64   // their local hashes, handed to the engine with them
	runs        []rankRuns // its walks per candidate, reused on ranks that did not change
	arrival     timing.Time
	jump        float64 // max(priority, 0): seconds of arrival credit (spec §10.11)
	strict      uint32
}

type activeSeq struct {
	worker, rank int
	prefill      int         // its uncached prompt tokens, until PrefillDone
	dur          timing.Time // aic: its predicted prefill time
	held         HeldSeq     // its prompt blocks in the active tree
}

// NewKV returns a KV router.
func NewKV(cfg KVConfig) (*KV, error) {
	if cfg.BlockSize < 1 {
		return nil, fmt.Errorf("router: block size must be ≥ 1, got %d", cfg.BlockSize)
	}
	idx := NewIndexer(cfg.BlockSize)
	idx.TTL = cfg.TTL
	idx.chains = cfg.UseEvents // the stored hashes as chains (chainindex.go)
	busy := math.MaxInt
	if cfg.Threshold > 0 {
		limit := cfg.MaxBatchedTokens
		if limit <= 0 {
			limit = 10_000_000 // the reference's cap for an engine without a limit
		}
		busy = int(min(cfg.Threshold*float64(limit), math.MaxInt32))
	}
	return &KV{
		busy:   busy,
		cfg:    cfg,
		idx:    idx,
		rng:    rand.New(rand.NewPCG(cfg.Seed, 0x6b76726f75746572)), // "kvrouter"
		queued: map[uint64]queuedSeq{},
	}, nil
}

// Place implements Policy.
func (r *KV) Place(q *Request, v View) (Placement, bool) {
	bs := r.cfg.BlockSize
	if !r.cfg.UseEvents {
		r.idx.Expire(q.Now)
	}
	held, wasHeld := r.queued[q.ID]
	reuse := wasHeld && held.isl == len(q.Prompt)
	if reuse {
		// A held request offered again (at every pass end while all
		// workers are busy) has the same prompt: hashing it again was
		// most of a queued replay's CPU (issue 34 item 2).
		r.hashes = append(r.hashes[:0], held.hashes...)
		r.locals = append(r.locals[:0], held.locals...) // for the engine (PromptHashes)
	} else {
		if r.locals == nil {
			r.locals = make([]uint64, 0, 64)
		}
		r.hashes, r.locals = r.idx.HashesLocals(q.Prompt, q.RunLen, r.hashes[:0], r.locals[:0])
	}
	isl := len(q.Prompt)
	r.cands, r.runs = r.cands[:0], r.runs[:0]
	for w := range v.Workers() {
		if !v.Routable(w) {
			continue
		}
		for k := range v.Ranks(w) {
			ld := r.rank(w, k)
			// Block hashes chain their prefix, so the blocks cached and
			// the blocks active sequences share with the request are
			// leading runs: each walk stops at its first miss
			// (O(matched blocks)).
			// A held request offered again (after every pass end) walks
			// only the ranks that changed since it was held.
			gen, c := r.idx.Gen(w, k), len(r.cands)
			var rr rankRuns
			if reuse && c < len(held.runs) && held.runs[c].gen == gen && held.runs[c].worker == w && held.runs[c].rank == k {
				rr = held.runs[c]
			} else {
				rr = rankRuns{gen: gen, worker: w, rank: k}
				rr.overlap, rr.shared = r.idx.Runs(w, k, r.hashes)
				if c := &r.cfg.Cost; c.HostCacheHitWeight != 0 || c.DiskCacheHitWeight != 0 {
					// weights of 0 give lower-tier blocks no credit: no walk
					rr.host, rr.disk = r.idx.LowerOverlap(w, k, r.hashes, rr.overlap)
				}
			}
			r.runs = append(r.runs, rr)
			overlap, shared, host, disk := rr.overlap, rr.shared, rr.host, rr.disk
			additional := len(r.hashes) - shared
			prefill := r.activePrefill(ld, q.Now)
			r.cands = append(r.cands, Candidate{
				Placement:     Placement{w, k, overlap * bs},
				NoLoad:        ld.requests == 0,
				Cached:        overlap * bs,
				DeviceOverlap: float64(overlap),
				HostOverlap:   float64(host),
				DiskOverlap:   float64(disk),
				ActivePrefill: prefill,
				DecodeBlocks:  PotentialDecodeBlocks(r.idx.Held(w, k), isl, bs, true, additional),
				Requests:      ld.requests,
				Overloaded:    prefill > r.busy,
			})
		}
	}
	i, costs, err := r.cfg.Cost.Select(isl, bs, r.cands, r.rng, r.costs)
	r.costs = costs
	if err != nil {
		// Every worker is busy: the request waits in the router queue.
		best := 0
		for i := range r.cands {
			best = max(best, r.cands[i].Cached)
		}
		kept, locals, runs := held.hashes, held.locals, held.runs[:0]
		if !reuse {
			kept, locals, runs = append([]uint64(nil), r.hashes...), append([]uint64(nil), r.locals...), nil
		}
		r.hold(q, queuedSeq{isl: isl, cached: best, hashes: kept, locals: locals, runs: append(runs, r.runs...)})
		return Placement{}, false
	}
	r.unhold(q.ID)
	c := &r.cands[i]
	ld := r.rank(c.Worker, c.Rank)
	a := r.newActive(q.ID)
	*a = activeSeq{worker: c.Worker, rank: c.Rank, prefill: max(isl-c.Cached, 0)}
	r.idx.Placed(c.Worker, c.Rank, r.hashes, r.runs[i].overlap)
	a.held = r.idx.Hold(c.Worker, c.Rank, r.hashes)
	ld.prefill += a.prefill
	ld.requests++
	if r.cfg.PrefillMs != nil && a.prefill > 0 {
		a.dur = timing.FromMs(r.cfg.PrefillMs(isl, c.Cached))
		if len(ld.pending) == 0 {
			ld.since = q.Now
		}
		ld.pending = append(ld.pending, q.ID)
	}
	if !r.cfg.UseEvents {
		r.idx.Remember(c.Worker, c.Rank, r.hashes, q.Now)
	}
	return c.Placement, true
}

// newActive returns request id's active sequence to fill in: a new one, or
// the one it has (placed again, it replaces it, as a map assignment would).
func (r *KV) newActive(id uint64) *activeSeq {
	if i, ok := r.active.Get(id); ok {
		return &r.seqs[i]
	}
	var i int32
	if n := len(r.free); n > 0 {
		i, r.free = r.free[n-1], r.free[:n-1]
	} else {
		i = int32(len(r.seqs))
		r.seqs = append(r.seqs, activeSeq{})
	}
	r.active.Put(id, i)
	return &r.seqs[i]
}

// activeOf is request id's active sequence, nil if it has none; valid
// until the next newActive.
func (r *KV) activeOf(id uint64) *activeSeq {
	if i, ok := r.active.Get(id); ok {
		return &r.seqs[i]
	}
	return nil
}

func (r *KV) rank(w, k int) *rankLoad {
	for len(r.load) <= w {
		r.load = append(r.load, nil)
	}
	for len(r.load[w]) <= k {
		r.load[w] = append(r.load[w], rankLoad{})
	}
	return &r.load[w][k]
}

// Next implements Policy: the router queue's order (spec §10.11): fcfs the
// oldest, lcfs the newest, wspt the fewest uncached prompt tokens (the
// oldest among equals).
func (r *KV) Next(held []uint64) int {
	if r.ranked > 0 {
		return r.nextRanked(held)
	}
	switch r.cfg.QueuePolicy {
	case "lcfs":
		return len(held) - 1
	case "wspt":
		best, bestScore := 0, -1.0
		for i, id := range held {
			q := r.queued[id]
			score := 1 / float64(max(q.isl-min(q.cached, q.isl), 1))
			if score > bestScore {
				best, bestScore = i, score
			}
		}
		return best
	}
	return 0
}

// Observe implements Policy: the events go to the indexer (unused in the
// approximate mode).
func (r *KV) Observe(w int, events []kv.Event) {
	if r.cfg.UseEvents {
		// An inconsistent stream would be an engine bug (the engine
		// fuzz tests check the streams); the index follows it anyway.
		_ = r.idx.Apply(w, events)
	}
}

// PrefillDone implements Policy: the request's prompt no longer loads its
// worker's prefill.
func (r *KV) PrefillDone(id uint64, now timing.Time) {
	a := r.activeOf(id)
	if a == nil || a.prefill == 0 {
		return
	}
	ld := r.rank(a.worker, a.rank)
	ld.prefill -= a.prefill
	a.prefill = 0
	if i := slices.Index(ld.pending, id); i >= 0 {
		ld.pending = slices.Delete(ld.pending, i, i+1)
		if i == 0 {
			ld.since = now // the next oldest starts to decay
		}
	}
}

// activePrefill is the prefill load of ld at now: its tracked tokens, less
// the decayed part of the oldest one's under the aic model.
func (r *KV) activePrefill(ld *rankLoad, now timing.Time) int {
	if len(ld.pending) == 0 {
		return ld.prefill
	}
	a := r.activeOf(ld.pending[0])
	frac := 1.0
	if a.dur > 0 {
		frac = min(float64(now-ld.since)/float64(a.dur), 1)
	}
	return ld.prefill - int(float64(a.prefill)*max(frac, 0))
}

// Finished implements Policy.
func (r *KV) Finished(id uint64, now timing.Time) {
	i, ok := r.active.Get(id)
	if !ok {
		return
	}
	a := &r.seqs[i]
	r.PrefillDone(id, now)
	ld := r.rank(a.worker, a.rank)
	r.idx.Release(a.worker, a.rank, a.held)
	ld.requests--
	r.active.Delete(id)
	r.free = append(r.free, i)
}

// Added implements Policy.
func (r *KV) Added(int) {}

// Removed implements Policy: the worker's cache and load are forgotten.
func (r *KV) Removed(w int) {
	r.idx.RemoveWorker(w)
	if w < len(r.load) {
		r.load[w] = nil
	}
}
