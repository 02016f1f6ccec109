// Package engine holds the simulated engine cores, priced by a timing.Model:
// the vLLM-shaped scheduler (Core; also TensorRT-LLM with its
// GUARANTEED_NO_EVICT capacity policy) over the kv package's block manager
// with the native or the KVBM-style lineage pool, and the SGLang-shaped
// scheduler (SGLangCore) over a page pool and radix cache. Both support
// speculative decoding as burst sampling. A core is a pure state machine
// behind the Rank interface: the driver submits requests and calls Step with
// the virtual time; Step runs one forward pass and reports what it produced
// and when it ends.
//
// Each core is one request book (book.go: the lifecycle both share,
// including disaggregation's handoff and abort) plus a scheduler that owns
// only admission, preemption or retraction, ordering and pricing. The book
// reaches KV memory through a narrow interface with two implementations:
// blockMem (the block manager, with KVBM's lower tiers as a kv/tiers.Layer
// around its pool) and pageMem (SGLang's token pool and radix cache).
package engine

import (
	"fmt"

	"github.com/dynosim/dynosim-web/kv"
	"github.com/dynosim/dynosim-web/kv/tiers"
	"github.com/dynosim/dynosim-web/timing"
)

// Request is a request as the engine receives it.
type Request struct {
	ID        uint64
	Prompt    []uint32 // prompt tokens; read during Submit only
	MaxOutput int      // requested output tokens
	Planned   []uint32 // optional exact output tokens; its length overrides MaxOutput
	// Priority orders the waiting queue and the preemption victims under
	// Config.PriorityScheduling, lower first (vLLM's request priority);
	// ignored otherwise.
	Priority int32
	// Hashes and Locals are the chained sequence hashes and the local
	// hashes of the prompt's full blocks of HashBlock tokens, when the
	// caller already computed them (the KV router hashes a prompt to place
	// it). The engine takes them instead of hashing the prompt again if
	// HashBlock is its block size and they cover every full block (issue
	// 34 item 2); otherwise it hashes. Read during Submit only.
	HashBlock      int
	Hashes, Locals []uint64
}

// Signal is one output of a pass: a token, or a terminal event without one.
type Signal struct {
	ID        uint64
	Token     uint32
	HasToken  bool
	Completed bool   // the request's lifecycle ended
	Rejected  bool   // it cannot run: too large for the pool or the model length
	Reason    Reason // why it was rejected
	Cached    int    // prompt tokens served from cache, on the first signal only; else -1
	// HandoffMs is the modeled KV transfer time to the decode side, on a
	// prefill worker's terminal signal only (spec §7.2).
	HandoffMs float64
}

// Reason says why a request was rejected.
type Reason uint8

const (
	NotRejected Reason = iota
	KVCapacity         // its sequence can never fit the KV pool
	MaxModelLen        // its prompt reaches max_model_len
	// MaxBatchedTokens: its prompt is longer than max_batched_tokens with
	// chunked prefill off, so no pass could ever hold it (PromptReason).
	MaxBatchedTokens
)

// String is the reason's name in reports.
func (r Reason) String() string {
	switch r {
	case KVCapacity:
		return "kv_capacity"
	case MaxModelLen:
		return "max_model_len"
	case MaxBatchedTokens:
		return "max_batched_tokens"
	}
	return "unspecified"
}

// Handoff makes a core a disaggregated prefill worker: each request ends
// with its first token, no decode time is charged, and the terminal signal
// carries the line-rate transfer time of the prompt's KV.
type Handoff struct {
	KVBytesPerToken float64
	BandwidthGBps   float64 // 10^9 bytes/s; 0 disables the delay
	// Hold keeps a finished request's KV until Release (the coordinated
	// bootstrap path: the source holds until the destination has it).
	Hold bool
}

// DelayMs is the line-rate transfer time of tokens prompt tokens (spec
// §7.2): no contention, 0 without a bandwidth.
func (h *Handoff) DelayMs(tokens int) float64 {
	if h.BandwidthGBps <= 0 {
		return 0
	}
	return float64(float64(tokens)*h.KVBytesPerToken) / (h.BandwidthGBps * 1e9) * 1000
}

// Admission records a request taken from the waiting queue in a pass.
type Admission struct {
	ID     uint64
	Reused int  // prompt tokens reused from the prefix cache
	Again  bool // a re-admission after a preemption or retraction (not a next prefill chunk)
	// Parked: not admitted yet but set aside, its G1 slots reserved, while
	// its prefix comes back from a lower tier (it is admitted later).
	Parked bool
}

// FPM is the forward-pass metrics snapshot of one pass (spec §1.6).
type FPM struct {
	PrefillRequests, PrefillTokens, PrefillKVTokens int
	VarPrefillLength                                float64
	DecodeRequests, DecodeKVTokens                  int
	VarDecodeKVTokens                               float64
	QueuedPrefill, QueuedPrefillTokens              int
	QueuedDecode, QueuedDecodeKVTokens              int
	// Wall is the pass's duration; WallTimeSecs gives it in seconds (a
	// method, not a field: the two divisions, per pass, cost the replay
	// more than all its other FPM bookkeeping, for consumers few runs have,
	// issue 34 item 1).
	Wall timing.Time
}

// WallTimeSecs is the pass's duration in seconds (spec §1.6).
func (f *FPM) WallTimeSecs() float64 { return f.Wall.Ms() / 1000 }

// Metrics is a core's load after a pass, with cumulative counters.
type Metrics struct {
	Running, Waiting int
	ActiveBlocks     int
	TotalBlocks      int
	Preemptions      int // cumulative; includes SGLang retractions
	Holds            int // finished prefills holding their KV (disaggregation)
	Reserved         int // reservations granted or pending (disaggregation)
	Counters             // cumulative
}

// Counters are per-engine work counters, reported per pass (Pass.Counters)
// and cumulatively (Metrics.Counters).
type Counters struct {
	// CacheHitTokens and CacheTotalTokens are the SGLang core's prefix
	// metrics (the reference's sglang_cache_hit_tokens / _total_tokens):
	// over the prefill items of a pass, Σ prefix and Σ (prefix + computed).
	// A chunked prompt counts once per chunk, with its earlier chunks as
	// prefix, as in the reference. Zero for the vLLM/TensorRT-LLM core.
	CacheHitTokens, CacheTotalTokens int
	// Retractions counts SGLang decode retractions (also in Preemptions).
	Retractions int
	// AcceptedTokens and DecodeForwards are the accept-length counters
	// (accept_length_output_tokens / _decode_forwards): tokens emitted by
	// decode forwards and the number of request-forwards that emitted them.
	// Their ratio is the mean accept length (1 without speculation).
	AcceptedTokens, DecodeForwards int
}

func (c *Counters) add(d Counters) {
	c.CacheHitTokens += d.CacheHitTokens
	c.CacheTotalTokens += d.CacheTotalTokens
	c.Retractions += d.Retractions
	c.AcceptedTokens += d.AcceptedTokens
	c.DecodeForwards += d.DecodeForwards
}

// Pass is the result of one Step. Its slices are reused by the next Step.
type Pass struct {
	Start, End timing.Time
	Signals    []Signal
	Admissions []Admission
	Events     []kv.Event
	Reserved   []Reservation // reservations granted at the pass start
	FPM        FPM
	Metrics    Metrics
	Counters   Counters // this pass only
	// Busy reports whether the pass scheduled or emitted anything; a core
	// with requests whose passes are not busy is stuck.
	Busy bool
	// Watched is what the pass did for Config.Watch's request; nil when
	// the pass did not compute or preempt it. A pointer into the core, so
	// that the pass, reset every time, stays small.
	Watched *Watched
}

// Watched is what one pass did for the one request a run watches
// (Config.Watch), the request-life capture. Only that request is looked
// at, so a run that watches nothing pays one comparison per scheduled
// request.
type Watched struct {
	In            bool // it was computed in the pass
	Preempted     bool // it was preempted (vLLM) or retracted (SGLang) in the pass
	PrefillTokens int  // tokens it computed as a prefill chunk (prompt, or recompute)
	DecodeTokens  int  // tokens it computed as decode steps
	Batch         int  // requests the pass computed for: prefill chunks plus decodes
	Rank          int  // the data-parallel rank that ran it
}

// Policy selects the engine: the vLLM-shaped core with vLLM's or
// TensorRT-LLM's capacity policy, or the SGLang core.
type Policy uint8

const (
	VLLM Policy = iota
	// TRTLLM is TensorRT-LLM's GUARANTEED_NO_EVICT: reserve prompt plus
	// maximum output at admission, never preempt.
	TRTLLM
	// SGLang is the SGLang-shaped core (spec §3): token pool + radix cache,
	// prefill-then-decode passes, retraction instead of preemption.
	SGLang
)

// G1Backend selects the G1 block pool of the vLLM-shaped core.
type G1Backend uint8

const (
	NativeG1 G1Backend = iota // vLLM's physical pool (spec §4.3)
	KVBMG1                    // kvbm-logical's lineage pool (spec §4.4)
)

// Preemption orders victim selection.
type Preemption uint8

const (
	LIFO Preemption = iota // newest running request first (vLLM v1)
	FIFO
)

// Config configures one core (one data-parallel rank).
type Config struct {
	Policy           Policy
	BlockSize        int
	NumBlocks        int
	MaxBatchedTokens int // 0: unbounded
	MaxSeqs          int // 0: unbounded
	ChunkedPrefill   bool
	PrefixCaching    bool
	Preemption       Preemption
	// PriorityScheduling is vLLM's --scheduling-policy priority
	// (priority.go): the waiting queue is ordered by (Request.Priority,
	// arrival) and the preemption victim is the running request with the
	// largest (priority, arrival); Preemption is then not used. vLLM only.
	PriorityScheduling bool
	MaxModelLen        int // 0: none
	Model              timing.Model
	Scale              timing.Scale
	Seed               uint64 // output-token stream
	Events             bool   // publish KV events
	TransientEvents    bool   // Events' reader is done with them by the next Step: the log reuses its buffers (kv.EventLog.Transient)
	DPRank             int
	G1                 G1Backend    // vLLM/TRT-LLM only; SGLang has its radix cache
	Spec               Speculation  // speculative decoding (NextN 0: off)
	SGLang             SGLangConfig // SGLang core knobs (page size = BlockSize)
	Prefill            *Handoff     // non-nil: a disaggregated prefill worker
	// Decode makes a disaggregated decode worker: prompts arrive with their
	// KV (Reserve, Activate) and recomputing one after a preemption is
	// free (spec §7.3).
	Decode bool
	// Watch is the request whose passes Pass.Watched describes (0: none).
	Watch uint64
	// Tiers are the KVBM lower tiers of the core's pool (nil: none): the
	// core joins them as a worker. vLLM/TensorRT-LLM with the kvbm G1 and
	// prefix caching only.
	Tiers *tiers.System
	// BatchWait is TensorRT-LLM's context batch waiting (batchwait.go);
	// the zero value is off. TRT-LLM only.
	BatchWait BatchWait
}

// FieldError is a failed check of one engine setting. Field is the
// setting's stable key, its YAML name under a worker role ("block_size",
// "max_batched_tokens", "sglang.chunked_prefill_size") or under
// speculation ("num_speculative_tokens", "acceptance_rates[1]"); front ends
// map it to their own path.
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// String is the backend name of the policy: vllm, trtllm or sglang.
func (p Policy) String() string {
	switch p {
	case TRTLLM:
		return "trtllm"
	case SGLang:
		return "sglang"
	}
	return "vllm"
}

// DefaultBlockSize is the policy's default block (page) size: vLLM 64,
// TensorRT-LLM 32, SGLang 1.
func DefaultBlockSize(p Policy) int {
	switch p {
	case TRTLLM:
		return 32
	case SGLang:
		return 1
	}
	return 64
}

// Default scheduler budgets (vLLM's max_num_batched_tokens, max_num_seqs).
const (
	DefaultMaxBatchedTokens = 8192
	DefaultMaxSeqs          = 256
)

// MaxBlocks bounds a pool (blocks, or SGLang pages), so slot ids (int32)
// and a pool's token count stay in range. Pools allocate a block's
// bookkeeping on first use; what a run can come to hold is bounded as a
// whole before it is built (core/sim's memory check: 2^24 used blocks take
// about 1.2 GiB).
const MaxBlocks = 1 << 24

// MaxBlockSize bounds the tokens of a block (page), so a pool's token count
// (MaxBlocks × MaxBlockSize = 2^40) never overflows.
const MaxBlockSize = 1 << 16

// Validate checks a config.
func (c *Config) Validate() error {
	if err := c.ValidateSettings(); err != nil {
		return err
	}
	switch {
	case c.NumBlocks < 1:
		return fieldErr("capacity", "must be ≥ 1 block, got %d", c.NumBlocks)
	case c.Model == nil:
		return fieldErr("timing", "no model")
	}
	return nil
}

// ValidateSettings checks the settings a user gives (everything but the
// pool size and the timing model, which are derived); its errors are
// *FieldError.
func (c *Config) ValidateSettings() error {
	if c.Spec.NextN != 0 {
		if _, err := NormalizeAcceptRates(c.Spec.NextN, c.Spec.AcceptRates); err != nil {
			return err
		}
		if d := c.Scale.DecodeSpeedup; d != 0 && d != 1 {
			return fieldErr("decode_speedup", "must be 1 with speculative decoding (bursts model the speed-up), got %v", d)
		}
	}
	switch {
	case c.NumBlocks > MaxBlocks:
		return fieldErr("capacity.blocks", "must be ≤ %d (engine.MaxBlocks), got %d", MaxBlocks, c.NumBlocks)
	case c.BlockSize > MaxBlockSize:
		return fieldErr("block_size", "must be ≤ %d, got %d", MaxBlockSize, c.BlockSize)
	case c.Policy == SGLang && c.BlockSize < 1:
		return fieldErr("block_size", "must be ≥ 1 for sglang (its page size), got %d", c.BlockSize)
	case c.Policy != SGLang && c.BlockSize < 2:
		return fieldErr("block_size", "must be ≥ 2 for %s, got %d", c.Policy, c.BlockSize)
	case c.MaxBatchedTokens < 0:
		return fieldErr("max_batched_tokens", "must be ≥ 0 (0 = unbounded), got %d", c.MaxBatchedTokens)
	case c.MaxSeqs < 0:
		return fieldErr("max_sequences", "must be ≥ 0 (0 = unbounded), got %d", c.MaxSeqs)
	case c.MaxModelLen < 0:
		return fieldErr("max_model_len", "must be ≥ 0, got %d", c.MaxModelLen)
	case c.MaxModelLen > 0 && c.Policy != VLLM:
		return fieldErr("max_model_len", "only supported by the vllm backend")
	case !c.ChunkedPrefill && c.Policy != SGLang && c.MaxModelLen > 0 && c.MaxBatchedTokens > 0 && c.MaxBatchedTokens < c.MaxModelLen:
		// Issue 30 item 7: vLLM refuses this at start-up
		// (vllm/config/scheduler.py, SchedulerConfig._verify_args: without
		// chunked prefill max_num_batched_tokens must be ≥ max_model_len,
		// else a ValueError), since a prompt longer than the budget could
		// never be scheduled.
		return fieldErr("max_batched_tokens", "must be ≥ scheduler.max_model_len (%d) with scheduler.chunked_prefill: false, got %d: a prompt longer than one pass's budget could never be prefilled (vLLM refuses this at start-up); turn chunked_prefill on, raise max_batched_tokens or lower max_model_len", c.MaxModelLen, c.MaxBatchedTokens)
	case c.PriorityScheduling && c.Policy != VLLM:
		return fieldErr("policy", "priority is modelled by the vllm backend only (vLLM's --scheduling-policy priority), not by %s; use fcfs", c.Policy)
	case c.PriorityScheduling && c.Tiers != nil:
		return fieldErr("policy", "priority is not modelled with KVBM lower tiers (kv_cache.tiers); use fcfs or turn the tiers off")
	case c.Tiers != nil && c.Policy == SGLang:
		return fieldErr("tiers", "not supported by the sglang backend (KVBM's lower tiers attach to the vLLM/TensorRT-LLM core only)")
	case c.Tiers != nil && c.G1 != KVBMG1:
		return fieldErr("tiers", "need g1_backend: kvbm (the native G1 models only the engine's own GPU tier)")
	case c.Tiers != nil && !c.PrefixCaching:
		return fieldErr("tiers", "need prefix_caching: true (lower tiers keep blocks by their prefix hash)")
	}
	if err := c.validateBatchWait(); err != nil {
		return err
	}
	if c.Policy == SGLang {
		return c.validateSGLang()
	}
	return nil
}

// Core is the vLLM-shaped scheduler of one data-parallel rank.
type Core struct {
	book
	blockMem
	mixed timing.Mixed // cfg.Model, when it prices mixed passes as one forward

	// lower tiers (tiers.go; the layer is blockMem.tier)
	parked, unparked []*seq   // waiting for onboarded blocks, in park order
	burstClaim       kv.Lease // the room bursts wait for (reserveBursts)

	// per-pass state
	passID      uint64
	budget      int
	preempted   bool
	worked      bool // this pass computed tokens
	cursor      int
	batchCount  int
	batchISL    int
	batchPrefix int
	tokens      []Signal
	rejected    []Signal
	ready       []*seq
	fpmPrefill  welford
	fpmDecode   welford

	waitIters int // passes the context batch has been held (batchwait.go)
}

// New returns a core.
func New(cfg Config) (*Core, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Policy == SGLang {
		return nil, fmt.Errorf("engine: the SGLang policy has its own core; use NewRank or NewSGLang")
	}
	c := &Core{}
	c.mixed, _ = cfg.Model.(timing.Mixed)
	var events *kv.EventLog
	if cfg.Events && cfg.PrefixCaching {
		events = &kv.EventLog{DPRank: cfg.DPRank, Transient: cfg.TransientEvents}
	}
	var pool kv.BlockPool = kv.NewPool(cfg.NumBlocks)
	var lineage *kv.LineagePool
	if cfg.G1 == KVBMG1 {
		lineage = kv.NewLineagePool(cfg.NumBlocks)
		pool = lineage
	}
	c.blockMem = blockMem{
		kv:      kv.NewManagerWith(pool, cfg.BlockSize, cfg.PrefixCaching, events),
		bs:      cfg.BlockSize,
		caching: cfg.PrefixCaching,
		bursts:  cfg.Spec.NextN != 0,
	}
	var err error
	if c.book, err = newBook(cfg, &c.blockMem); err != nil {
		return nil, err
	}
	c.events = events
	if cfg.Tiers != nil {
		// Validate admits tiers only over the kvbm pool, which offloads.
		c.tier = cfg.Tiers.Attach(lineage, events)
	}
	return c, nil
}

// Rank is one data-parallel rank's engine core, as a driver sees it.
type Rank interface {
	// Submit enqueues a request; ids must be unique among held requests.
	Submit(Request) error
	// Step runs one forward pass starting at now. The returned pass is
	// reused by the next Step.
	Step(now timing.Time) *Pass
	// Empty reports whether the rank holds no requests.
	Empty() bool
	// Metrics returns the rank's load and cumulative counters.
	Metrics() Metrics

	// Disaggregation (handoff.go): a decode worker's reservations and
	// activations, a prefill worker's holds.
	Reserve(Request) (Reason, error)
	Activate(id uint64) bool
	Release(id uint64) bool
	Cancel(id uint64) bool
	// Abort ends a waiting or running request between passes and frees
	// its KV (live mode: the client went away); false if it is not there.
	Abort(id uint64) bool
}

var (
	_ Rank = (*Core)(nil)
	_ Rank = (*SGLangCore)(nil)
)

// NewRank returns the core cfg.Policy selects.
func NewRank(cfg Config) (Rank, error) {
	if cfg.Policy == SGLang {
		return NewSGLang(cfg)
	}
	return New(cfg)
}

// Metrics returns the core's current load.
func (c *Core) Metrics() Metrics {
	return c.metrics(c.kv.Pool.Active(), len(c.parked))
}

// Pool exposes the KV pool (read-only use: tests and reports).
func (c *Core) Pool() kv.BlockPool { return c.kv.Pool }
