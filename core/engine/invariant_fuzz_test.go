package engine

import (
	"fmt"
	"testing"

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
