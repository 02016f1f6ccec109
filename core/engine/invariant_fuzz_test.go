package engine

import (
	"fmt"
	"testing"

	"github.com/dynosim/dynosim-web/kv"
	"github.com/dynosim/dynosim-web/kv/tiers"
	"github.com/dynosim/dynosim-web/timing"
)

// This file fuzzes every engine core with random request streams and checks,
// after every pass, the accounting invariants the cores are meant to keep:
//
//   - KV blocks are conserved: for the vLLM-shaped core, the blocks held by
//     the leases of running requests are exactly the pool's active blocks,
//     private blocks are held once, shared blocks only at cached positions of
//     equal hash, and finalized blocks are findable by hash (the one copy,
//     for the KVBM pool); for the SGLang core, free pages + pages cached in
//     the radix tree + private pages of held requests = the pool, and each
//     request's locked path is its cached prefix;
//   - no request is in two queues or twice in one, and the held count is
//     waiting + running (and matches the requests the driver saw no
//     terminal signal for);
//   - a request emits at most its output length (exactly it when it
//     completes), planned tokens in order, completes exactly once, and
//     nothing for it follows its terminal signal;
//   - passes never run backwards, a pass that is not busy changes nothing
//     and takes no time, counters and metrics agree with the signals, and
//     the KV event stream matches what is resident;
//   - stepping with no new work drains every request within a bound, with
//     no stuck pass, and leaves no active blocks.
//
// Run one target with, e.g.,
//
//	go test ./core/engine -run '^$' -fuzz '^FuzzVLLMStepInvariants$' -fuzztime 60s -parallel 1

// fzFamily is an engine core under test.
type fzFamily uint8

const (
	fzNative fzFamily = iota // vLLM-shaped core, native G1 pool
	fzKVBM                   // vLLM-shaped core, KVBM lineage pool
	fzTRT                    // TensorRT-LLM policy (native or KVBM pool)
	fzSG1                    // SGLang, page size 1
	fzSG16                   // SGLang, page size 16
	fzTiers                  // vLLM or TensorRT-LLM on KVBM with lower tiers G2/G3/G4
)

var fzAllFamilies = []fzFamily{fzNative, fzKVBM, fzTRT, fzSG1, fzSG16, fzTiers}

// Bounds of one fuzz input, so an exec stays in the millisecond range.
const (
	fzMaxRequests  = 48
	fzMaxOpSteps   = 600
	fzMaxDrainPass = 20000
	fzMaxOutput    = 50
)

// fzReader hands out the fuzz input byte by byte, then zeros.
type fzReader struct {
	b []byte
	i int
}

func (r *fzReader) next() byte {
	if r.i >= len(r.b) {
		return 0
	}
	v := r.b[r.i]
	r.i++
	return v
}

func (r *fzReader) more() bool { return r.i < len(r.b) }

// fzSetup is the decoded engine choice.
type fzSetup struct {
	family    fzFamily
	cfg       Config
	ranks     int // 1: the core itself; more: a Worker
	promptCap int // longest prompt the config can ever prefill
}

func (s fzSetup) String() string {
	c := s.cfg
	return fmt.Sprintf("family %d ranks %d policy %d g1 %d bs %d blocks %d mbt %d seqs %d chunked %v caching %v preempt %d priority %v spec %d sg %+v model %T",
		s.family, s.ranks, c.Policy, c.G1, c.BlockSize, c.NumBlocks, c.MaxBatchedTokens, c.MaxSeqs,
		c.ChunkedPrefill, c.PrefixCaching, c.Preemption, c.PriorityScheduling, c.Spec.NextN, c.SGLang, c.Model)
}

// fzDecodeSetup reads the 8 config bytes of an input: engine family,
// speculation, small pool, budgets, flags, timing model and seeds.
func fzDecodeSetup(r *fzReader, families []fzFamily, ranks int) fzSetup {
	b0, b1, b2, b3, b4, b5, b6, b7 := r.next(), r.next(), r.next(), r.next(), r.next(), r.next(), r.next(), r.next()
	n := byte(len(families))
	s := fzSetup{family: families[b0%n], ranks: ranks, promptCap: 1 << 30}
	hi := b0 / n
	c := &s.cfg
	c.Events = true
	c.Seed = uint64(b7)
	if b5&1 == 0 {
		c.Model = timing.Polynomial{}
	} else {
		c.Model = timing.Fixed{Prefill: float64(b5 >> 1 & 7), Decode: float64(b5 >> 4)}
	}
	if hi&1 != 0 {
		rates := [][]float64{nil, {0.8, 0.5}, {1, 1}}[int(b6)%3]
		c.Spec = Speculation{NextN: 2, AcceptRates: rates, Seed: uint64(b6)}
	}
	c.MaxSeqs = int(b4 % 9)
	c.PrefixCaching = b1&8 != 0
	capTokens := 16 + int(b2)*4 // 16..1036 tokens: small enough for pressure
	switch s.family {
	case fzSG1, fzSG16:
		page := 1
		if s.family == fzSG16 {
			page = 16
		}
		c.Policy = SGLang
		c.BlockSize = page
		c.NumBlocks = max(1, capTokens/page)
		sg := SGLangConfig{
			ChunkedPrefillSize: 8192, // "off": larger than any prompt
			Conservativeness:   []float64{1, 0.5, 0.1, 0}[b1>>5&3],
			ClipMaxNewTokens:   []int{0, 1, 4, 16}[b6>>4&3],
			MaxPrefillTokens:   int(b3>>5) * 24, // 0: the default
		}
		if b1&4 != 0 {
			sg.ChunkedPrefillSize = page * (1 + int(b3%32))
		}
		if b1&16 != 0 {
			sg.Schedule = LPM
		}
		// Issue 33 item 6: the reference's pass, SGLang's event loop, and
		// with mixed chunks.
		sg.Loop = SGLangLoop(hi >> 1 & 3 % 3)
		c.SGLang = sg
	default:
		c.BlockSize = []int{2, 4, 8, 16}[b1&3]
		c.NumBlocks = max(1, capTokens/c.BlockSize)
		c.ChunkedPrefill = b1&4 != 0
		if b1&16 != 0 {
			c.Preemption = FIFO
		}
		// Issue 30 item 8: vLLM's priority scheduling (not with tiers).
		c.PriorityScheduling = hi&4 != 0 && s.family != fzTRT && s.family != fzTiers
		if b3 >= 40 {
			c.MaxBatchedTokens = int(b3-40)*2 + 1 // 1..431
		}
		if !c.ChunkedPrefill && c.MaxBatchedTokens > 0 {
			// Without chunked prefill a prompt longer than the budget can
			// never be scheduled (vLLM requires max_num_batched_tokens ≥
			// max_model_len then); keep prompts within it.
			s.promptCap = c.MaxBatchedTokens
		}
		switch s.family {
		case fzKVBM:
			c.G1 = KVBMG1
		case fzTRT:
			c.Policy = TRTLLM
			if hi&2 != 0 {
				c.G1 = KVBMG1
			}
		case fzTiers:
			c.G1, c.PrefixCaching = KVBMG1, true
			if hi&2 != 0 {
				c.Policy = TRTLLM
			}
			// Small tiers (G2 of 1..16 blocks) and slow to instant links,
			// so copies overlap passes and staging runs out of G2 room.
			set := tiers.DefaultSettings()
			set.BlockSize, set.BytesPerToken = c.BlockSize, 2.5e5
			set.G2Blocks, set.G3Blocks, set.G4 = 1+int(b6&15), []int{0, 8, 64, 0}[b7&3], b7&4 != 0
			set.BatchBlocks = []int{1, 2, 32, 0}[b7>>3&3]
			set.WriteThrough = b7&32 != 0 // offload: on_store (issue 31 item 2)
			bw := []float64{1, 14, 0, 0.25}[b6>>4&3]
			set.G1ToG2, set.G2ToG1, set.G2ToG3, set.G3ToG2, set.G2ToG4, set.G4ToG2 = bw, bw, bw/2, bw/2, bw/4, bw/4
			tc, err := tiers.Resolve(set)
			if err != nil {
				panic(err)
			}
			c.Tiers = tiers.New(tc)
		}
	}
	return s
}

// fzPrefixToken is token i of shared prefix k: all prefixes share their first
// 24 tokens, prefix 3 shares its first 100 with prefix 0, so prompts reuse
// each other's blocks and the radix tree splits edges.
func fzPrefixToken(k, i int) uint32 {
	if i < 24 {
		return uint32(1 + i)
	}
	if k == 3 && i < 100 {
		k = 0
	}
	return uint32(k+1)*100000 + uint32(i)
}

// fzReq is what the harness knows of one submitted request.
type fzReq struct {
	rank      int
	promptLen int
	limit     int // effective output length
	planned   []uint32
	emitted   int
	signaled  bool // had its first (Cached-carrying) signal
	done      bool
}

// queued is what both cores keep of a queued request.
type queued struct {
	id                                      uint64
	done                                    bool
	length, promptLen, generated, maxOutput int
}

// checkQueued checks a request found in a rank's queues against what the
// driver saw of it; ids collects the ids seen on the rank.
func (h *fzHarness) checkQueued(rank int, ids map[uint64]bool, where string, r queued) {
	if ids[r.id] {
		h.failf("rank %d: request %d twice in the queues (%s)", rank, r.id, where)
	}
	ids[r.id] = true
	q := h.reqs[r.id]
	if q == nil || q.rank != rank || q.done {
		h.failf("rank %d: %s request %d unknown, on another rank or finished", rank, where, r.id)
	}
	switch {
	case r.done:
		h.failf("rank %d: finished request %d still %s", rank, r.id, where)
	case r.length != r.promptLen+r.generated || r.promptLen != q.promptLen:
		h.failf("rank %d: request %d length %d = prompt %d + generated %d?", rank, r.id, r.length, r.promptLen, r.generated)
	case r.generated != q.emitted || r.maxOutput != q.limit:
		h.failf("rank %d: request %d generated %d/%d, driver saw %d/%d", rank, r.id, r.generated, r.maxOutput, q.emitted, q.limit)
	}
}

// checkNoneLost fails if a request the driver holds on rank (no terminal
// signal yet) is not among the queued ids.
func (h *fzHarness) checkNoneLost(rank int, ids map[uint64]bool) {
	for _, id := range h.order {
		if q := h.reqs[id]; q.rank == rank && !q.done && !ids[id] {
			h.failf("rank %d: request %d is held (no terminal signal) but in no queue", rank, id)
		}
	}
}

// fzIndex is a router-style index of one rank's KV events.
type fzIndex struct {
	next   uint64
	blocks map[uint64]bool // device (G1)
	host   map[uint64]bool // G2 (tier host_pinned)
}

type fzHarness struct {
	t           *testing.T
	s           fzSetup
	ranks       []Rank
	worker      *Worker
	reqs        map[uint64]*fzReq
	order       []uint64
	nextID      uint64
	now         timing.Time
	passes      int
	lastEnd     timing.Time
	counters    Counters
	preemptions int
	index       []fzIndex
	maxBurst    int
	tokens      map[uint64]int // per-pass scratch: tokens per request
}

func fzNew(t *testing.T, s fzSetup) *fzHarness {
	h := &fzHarness{t: t, s: s, reqs: map[uint64]*fzReq{}, nextID: 1000,
		tokens: map[uint64]int{}, maxBurst: 1}
	if s.cfg.Spec.NextN > 0 {
		h.maxBurst = s.cfg.Spec.NextN + 1
	}
	if s.ranks > 1 {
		w, err := NewWorker(s.cfg, s.ranks)
		if err != nil {
			t.Fatalf("%v: %v", s, err)
		}
		h.worker, h.ranks = w, w.Ranks
	} else {
		r, err := NewRank(s.cfg)
		if err != nil {
			t.Fatalf("%v: %v", s, err)
		}
		h.ranks = []Rank{r}
	}
	for range h.ranks {
		h.index = append(h.index, fzIndex{blocks: map[uint64]bool{}, host: map[uint64]bool{}})
	}
	return h
}

func (h *fzHarness) failf(format string, args ...any) {
	h.t.Helper()
	h.t.Fatalf("pass %d at %v (%v): %s", h.passes, h.now, h.s, fmt.Sprintf(format, args...))
}

func (h *fzHarness) empty() bool {
	if h.worker != nil {
		return h.worker.Empty()
	}
	return h.ranks[0].Empty()
}

func (h *fzHarness) metrics() Metrics {
	if h.worker != nil {
		return h.worker.Metrics()
	}
	return h.ranks[0].Metrics()
}

// submit decodes one request from four bytes and submits it.
func (h *fzHarness) submit(r *fzReader) {
	a, plen, slen, out := r.next(), int(r.next()), int(r.next()%64), int(r.next())%(fzMaxOutput+1)
	k := int(a & 3)
	id := h.nextID
	h.nextID += 1 + uint64(a>>7) // ids unique, not always dense
	switch a >> 4 & 3 {
	case 1:
		slen = 0 // an exact shared prefix: full (block-aligned) hits happen
	case 2:
		plen, slen = plen%8, 0 // tiny or empty prompt
	}
	n := min(plen+slen, h.s.promptCap)
	prompt := make([]uint32, 0, n)
	for i := range min(plen, n) {
		prompt = append(prompt, fzPrefixToken(k, i))
	}
	for j := 0; len(prompt) < n; j++ {
		prompt = append(prompt, 50_000_000+uint32(id)*1000+uint32(j))
	}
	q := Request{ID: id, Prompt: prompt, MaxOutput: out, Priority: int32(id%3) - 1}
	if a&4 != 0 {
		q.Planned = make([]uint32, out)
		for j := range q.Planned {
			q.Planned[j] = 7_000_000 + uint32(id)*64 + uint32(j)
		}
	}
	rank := 0
	if len(h.ranks) > 1 {
		rank = int(a>>3&1) % len(h.ranks)
	}
	limit := out
	if c := h.s.cfg; c.Policy == TRTLLM {
		if capTok := c.NumBlocks * c.BlockSize; n < capTok {
			limit = min(limit, capTok-n) // GUARANTEED_NO_EVICT clamps at enqueue
		}
	}
	if err := h.ranks[rank].Submit(q); err != nil {
		h.failf("submit %d: %v", id, err)
	}
	h.reqs[id] = &fzReq{rank: rank, promptLen: n, limit: limit, planned: q.Planned}
	h.order = append(h.order, id)
}

// abort aborts the k-th submitted request (mod their count) between
// passes, as a live driver does when a client goes away: on success it
// emits nothing more, and the next pass's checks see its KV freed.
func (h *fzHarness) abort(k int) {
	id := h.order[k%len(h.order)]
	q := h.reqs[id]
	if q.done {
		return
	}
	if h.ranks[q.rank].Abort(id) {
		q.done = true
	}
	h.checkHeld()
}

// step runs one pass at a time ≥ the previous pass end and checks it.
func (h *fzHarness) step(dt timing.Time) *Pass {
	h.now = max(h.now, h.lastEnd) + dt
	var p *Pass
	if h.worker != nil {
		p = h.worker.Step(h.now)
	} else {
		p = h.ranks[0].Step(h.now)
	}
	h.passes++
	for _, rk := range h.ranks {
		// A pass that scheduled tokens changed the state, so it is busy
		// (a driver parks a worker whose pass is not busy).
		if c, ok := rk.(*Core); ok && !c.pass.Busy && c.pass.Start == h.now {
			for _, s := range c.running {
				if s.pass == c.passID && s.passTokens > 0 {
					h.failf("request %d computed %d tokens in a pass that is not busy", s.id, s.passTokens)
				}
			}
		}
	}
	h.checkPass(p)
	for i, rk := range h.ranks {
		switch c := rk.(type) {
		case *Core:
			h.checkCore(i, c)
		case *SGLangCore:
			h.checkSGLang(i, c)
		default:
			h.failf("rank %d is %T", i, rk)
		}
	}
	h.checkHeld()
	h.lastEnd = p.End
	return p
}

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

// drain steps without new work until every request has terminated.
func (h *fzHarness) drain() {
	for i := 0; !h.empty(); i++ {
		if i == fzMaxDrainPass {
			h.failf("not drained after %d passes: %+v", i, h.metrics())
		}
		if p := h.step(0); !p.Busy && !h.empty() {
			h.failf("stuck: a pass without work while holding %+v", p.Metrics)
		}
	}
	for _, id := range h.order {
		if !h.reqs[id].done {
			h.failf("request %d never terminated", id)
		}
	}
	for i, rk := range h.ranks {
		switch c := rk.(type) {
		case *Core:
			// Offload copies may still be in flight (their slots count as
			// active until they land); nothing else may be.
			if a, q := c.kv.Pool.Active(), c.kv.Pool.Quarantined(); a != q || len(c.parked) != 0 {
				h.failf("rank %d: %d active blocks (%d quarantined), %d parked after draining", i, a, q, len(c.parked))
			}
		case *SGLangCore:
			if c.tree.Protected() != 0 || c.pool.Available()+c.tree.Evictable()/c.page != c.total {
				h.failf("rank %d: after draining available %d evictable %d protected %d of %d pages", i,
					c.pool.Available(), c.tree.Evictable(), c.tree.Protected(), c.total)
			}
		}
	}
	if m := h.metrics(); m.Running != 0 || m.Waiting != 0 {
		h.failf("drained core reports %+v", m)
	}
}

// fzRun decodes and runs one input: a config, then operations (submit a
// request, step once after a pause, or step several times back to back),
// then a drain.
func fzRun(t *testing.T, data []byte, families []fzFamily, ranks int) {
	r := &fzReader{b: data}
	h := fzNew(t, fzDecodeSetup(r, families, ranks))
	steps := 0
	for r.more() && steps < fzMaxOpSteps {
		o := r.next()
		switch o & 3 {
		case 1:
			if o>>2 != 0 && len(h.order) > 0 {
				h.abort(int(o >> 2))
			} else if len(h.order) < fzMaxRequests {
				h.submit(r)
			}
		case 0:
			if len(h.order) < fzMaxRequests {
				h.submit(r)
			}
		case 2:
			h.step(timing.FromMs(float64(o>>2) / 4))
			steps++
		case 3:
			for range 1 + int(o>>2) {
				h.step(0)
				steps++
			}
		}
	}
	h.drain()
}

// fzSeed encodes a seed input: eight config bytes, then operations.
type fzSeed []byte

func fzConfig(b ...byte) fzSeed { return fzSeed(b) }

// req appends a submit: prefix k, prefix length, suffix length, output, and
// flags (4: planned, 8: second rank, 16: exact prefix, 32: tiny prompt).
func (s fzSeed) req(k, flags, plen, slen, out byte) fzSeed {
	return append(s, 0, k|flags, plen, slen, out)
}

// steps appends n back-to-back passes (n ≤ 64).
func (s fzSeed) steps(n byte) fzSeed { return append(s, 3|(n-1)<<2) }

// abort appends an abort of the k-th submitted request (0 < k < 64).
func (s fzSeed) abort(k byte) fzSeed { return append(s, 1|k<<2) }

// pause appends one pass after a pause of ms/4 milliseconds (ms < 64).
func (s fzSeed) pause(ms byte) fzSeed { return append(s, 2|ms<<2) }

// fzSeeds returns seed inputs for a target whose family byte selects among
// n families: every family, with and without speculation, in four shapes
// (prefix reuse with small budgets; a tight pool without chunking; decode
// growth that forces preemption or retraction, with and without caching).
func fzSeeds(n int) [][]byte {
	var out [][]byte
	for fam := range n {
		for spec := range 2 {
			for variant := range 4 {
				b0 := byte(fam + n*spec + n*2*variant) // bit 1 of b0/n: TRT on KVBM
				var s fzSeed
				switch variant {
				case 0:
					// Chunked, caching, LIFO, budget 65, 4 sequences.
					s = fzConfig(b0, 4|8|1, 60, 40+32, 4, 0, byte(spec), 1)
				case 1:
					// Tight pool, no chunking, caching, FIFO; SGLang: LPM,
					// low conservativeness, clip 1.
					s = fzConfig(b0, 8|16|2<<5, 20, 200, 0, 3|2<<1|3<<4, 1|1<<4, 2)
				case 2:
					// No caching, LIFO, unbounded; SGLang: optimistic.
					s = fzConfig(b0, 4|1|3<<5, 30, 0, 0, 1|1<<1|2<<4, 2<<4, 3)
				case 3:
					// Caching, FIFO, budget 33; SGLang: LPM, clip 4.
					s = fzConfig(b0, 8|16|2|1<<5, 36, 56, 6, 0, 2|2<<4, 4)
				}
				if variant < 2 {
					for i := range byte(10) {
						s = s.req(i%4, (i%3)<<4|(i%2)<<2|(i>>2&1)<<3, 20+i*23, i*5, 3+i*4)
						if i%3 == 2 {
							s = s.pause(i)
						}
					}
					s = s.steps(20).req(0, 16, 100, 0, 5).req(3, 16, 100, 0, 0).req(0, 32, 0, 0, 3).steps(8)
					// Clients go away: a running request, a waiting one.
					s = s.req(1, 0, 40, 9, 30).req(2, 0, 40, 9, 30).steps(2).abort(10).abort(11).steps(4)
				} else {
					for i := range byte(9) {
						s = s.req(i%4, (i%2)<<2|(i&1)<<3|(i/4%2)<<4, 10+i*3, i%3, 30+i*2)
					}
					s = s.steps(30).req(1, 16, 24, 0, 20).steps(10).req(1, 16, 24, 0, 20).req(2, 32, 5, 0, 9)
				}
				out = append(out, s)
			}
		}
	}
	return out
}

func fzTarget(f *testing.F, families []fzFamily, ranks int) {
	for _, s := range fzSeeds(len(families)) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) { fzRun(t, data, families, ranks) })
}

// FuzzVLLMStepInvariants fuzzes the vLLM-shaped core over the native and
// the KVBM G1 pool.
func FuzzVLLMStepInvariants(f *testing.F) { fzTarget(f, []fzFamily{fzNative, fzKVBM}, 1) }

// FuzzTRTLLMStepInvariants fuzzes the TensorRT-LLM GUARANTEED_NO_EVICT
// policy (native and KVBM pool).
func FuzzTRTLLMStepInvariants(f *testing.F) { fzTarget(f, []fzFamily{fzTRT}, 1) }

// FuzzTiersStepInvariants fuzzes the vLLM and TensorRT-LLM cores on the
// KVBM G1 with lower tiers: G1 accounting with quarantined and claimed
// slots, parked requests that always come back and finish, and the tiers'
// own invariants (System.Check: capacity, copies in flight).
func FuzzTiersStepInvariants(f *testing.F) { fzTarget(f, []fzFamily{fzTiers}, 1) }

// FuzzSGLangStepInvariants fuzzes the SGLang core with page size 1 and 16.
func FuzzSGLangStepInvariants(f *testing.F) { fzTarget(f, []fzFamily{fzSG1, fzSG16}, 1) }

// FuzzWorkerStepInvariants fuzzes a two-rank data-parallel worker of every
// engine core.
func FuzzWorkerStepInvariants(f *testing.F) { fzTarget(f, fzAllFamilies, 2) }

func TestFzStatsTmp(t *testing.T) {
	for ti, tg := range []struct {
		fam   []fzFamily
		ranks int
	}{{[]fzFamily{fzNative, fzKVBM}, 1}, {[]fzFamily{fzTRT}, 1}, {[]fzFamily{fzSG1, fzSG16}, 1}, {fzAllFamilies, 2}} {
		for si, s := range fzSeeds(len(tg.fam)) {
			r := &fzReader{b: s}
			h := fzNew(t, fzDecodeSetup(r, tg.fam, tg.ranks))
			_ = h
			fzRun(t, s, tg.fam, tg.ranks)
			// rerun to get stats
			r = &fzReader{b: s}
			h = fzNew(t, fzDecodeSetup(r, tg.fam, tg.ranks))
			steps := 0
			for r.more() {
				o := r.next()
				switch o & 3 {
				case 0, 1:
					h.submit(r)
				case 2:
					h.step(0)
					steps++
				case 3:
					for range 1 + int(o>>2) {
						h.step(0)
					}
				}
			}
			h.drain()
			rej, tok := 0, 0
			for _, q := range h.reqs {
				tok += q.emitted
				if q.emitted < q.limit {
					rej++
				}
			}
			m := h.metrics()
			t.Logf("target %d seed %d: %v: passes %d reqs %d rejected %d tokens %d preempt %d retract %d", ti, si, h.s, h.passes, len(h.reqs), rej, tok, m.Preemptions, m.Retractions)
		}
	}
}
