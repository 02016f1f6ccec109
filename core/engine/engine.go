// Package engine holds the simulated engine cores: the vLLM-shaped scheduler
// (also used for TensorRT-LLM with its capacity policy) over the kv package's
// block manager, priced by a timing.Model. A core is a pure state machine:
// the driver submits requests and calls Step with the virtual time; Step runs
// one forward pass and reports what it produced and when it ends.
package engine

import (
	"fmt"
	"math/rand/v2"

	"github.com/dynosim/dynosim-web/kv"
	"github.com/dynosim/dynosim-web/timing"
)

// Request is a request as the engine receives it.
type Request struct {
	ID        uint64
	Prompt    []uint32 // prompt tokens; read during Submit only
	MaxOutput int      // requested output tokens
	Planned   []uint32 // optional exact output tokens; its length overrides MaxOutput
}

// Signal is one output of a pass: a token, or a terminal event without one.
type Signal struct {
	ID        uint64
	Token     uint32
	HasToken  bool
	Completed bool // the request's lifecycle ended
	Rejected  bool // it never ran: too large for the pool or the model length
	Cached    int  // prompt tokens served from cache, on the first signal only; else -1
}

// Admission records a request taken from the waiting queue in a pass.
type Admission struct {
	ID     uint64
	Reused int // prompt tokens reused from the prefix cache
}

// FPM is the forward-pass metrics snapshot of one pass (spec §1.6).
type FPM struct {
	PrefillRequests, PrefillTokens, PrefillKVTokens int
	VarPrefillLength                                float64
	DecodeRequests, DecodeKVTokens                  int
	VarDecodeKVTokens                               float64
	QueuedPrefill, QueuedPrefillTokens              int
	QueuedDecode, QueuedDecodeKVTokens              int
	WallTimeSecs                                    float64
}

// Metrics is a core's load after a pass.
type Metrics struct {
	Running, Waiting int
	ActiveBlocks     int
	TotalBlocks      int
	Preemptions      int // cumulative
}

// Pass is the result of one Step. Its slices are reused by the next Step.
type Pass struct {
	Start, End timing.Time
	Signals    []Signal
	Admissions []Admission
	Events     []kv.Event
	FPM        FPM
	Metrics    Metrics
	// Busy reports whether the pass scheduled or emitted anything; a core
	// with requests whose passes are not busy is stuck.
	Busy bool
}

// Policy selects the capacity policy of the vLLM-shaped core.
type Policy uint8

const (
	VLLM Policy = iota
	// TRTLLM is TensorRT-LLM's GUARANTEED_NO_EVICT: reserve prompt plus
	// maximum output at admission, never preempt.
	TRTLLM
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
	MaxModelLen      int // 0: none
	Model            timing.Model
	Scale            timing.Scale
	Seed             uint64 // output-token stream
	Events           bool   // publish KV events
	DPRank           int
}

// Validate checks a config.
func (c *Config) Validate() error {
	switch {
	case c.BlockSize < 2:
		return fmt.Errorf("block_size: must be ≥ 2 for the vLLM/TensorRT-LLM core, got %d", c.BlockSize)
	case c.NumBlocks < 1:
		return fmt.Errorf("capacity: must be ≥ 1 block, got %d", c.NumBlocks)
	case c.MaxBatchedTokens < 0:
		return fmt.Errorf("max_batched_tokens: must be ≥ 0, got %d", c.MaxBatchedTokens)
	case c.MaxSeqs < 0:
		return fmt.Errorf("max_sequences: must be ≥ 0, got %d", c.MaxSeqs)
	case c.MaxModelLen < 0:
		return fmt.Errorf("max_model_len: must be ≥ 0, got %d", c.MaxModelLen)
	case c.Policy == TRTLLM && c.MaxModelLen > 0:
		return fmt.Errorf("max_model_len: not supported by the trtllm backend")
	case c.Model == nil:
		return fmt.Errorf("timing: no model")
	}
	return nil
}

type status uint8

const (
	waiting status = iota
	running
	preempted
)

// seq is the engine's state of one request.
type seq struct {
	id                  uint64
	promptLen           int
	maxOutput           int
	length              int // prompt + generated (known tokens)
	generated           int
	computed            int // tokens whose KV is computed (incl. cached prefix)
	status              status
	fresh               bool // never ran: the one-time size check applies
	cachedPrefix        int
	signaled            bool
	preemptions         int
	planned             []uint32
	hashes, locals      []uint64 // sequence and local hash of every full known block
	hasher              kv.Hasher
	lease               kv.Lease
	pass                uint64 // last pass that scheduled it
	passTokens          int    // tokens scheduled in that pass
	passPrompt, passPre int    // prompt tokens and prefix of that pass
	done                bool
}

func (s *seq) complete(maxModelLen int) bool {
	return s.generated >= s.maxOutput || (maxModelLen > 0 && s.length >= maxModelLen)
}

func (s *seq) knownBlocks(bs int) int { return (s.length + bs - 1) / bs }

// Core is the vLLM-shaped scheduler of one data-parallel rank.
type Core struct {
	cfg         Config
	kv          *kv.Manager
	events      *kv.EventLog
	rng         *rand.PCG
	waiting     deque
	running     []*seq
	live        int // requests held
	preemptions int
	passID      uint64

	// per-pass state
	budget       int
	preempted    bool
	cursor       int
	batchCount   int
	batchISL     int
	batchPrefix  int
	pass         Pass
	tokens       []Signal
	rejected     []Signal
	ready        []*seq
	fpmPrefill   welford
	fpmDecode    welford
	totalTokens  int
	unboundedTok bool
}

// New returns a core.
func New(cfg Config) (*Core, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Core{
		cfg: cfg,
		rng: rand.NewPCG(cfg.Seed, 0x6f7574707574), // "output"
	}
	if cfg.Events && cfg.PrefixCaching {
		c.events = &kv.EventLog{DPRank: cfg.DPRank}
	}
	c.kv = kv.NewManager(cfg.NumBlocks, cfg.BlockSize, cfg.PrefixCaching, c.events)
	return c, nil
}

// Config returns the core's config.
func (c *Core) Config() Config { return c.cfg }

// Empty reports whether the core holds no requests.
func (c *Core) Empty() bool { return c.live == 0 }

// Len is the number of requests the core holds.
func (c *Core) Len() int { return c.live }

// Submit enqueues a request at the tail of the waiting queue. Request ids
// must be unique among the requests the core holds.
func (c *Core) Submit(r Request) error {
	if r.MaxOutput < 0 {
		return fmt.Errorf("request %d: max output must be ≥ 0, got %d", r.ID, r.MaxOutput)
	}
	s := &seq{
		id:        r.ID,
		promptLen: len(r.Prompt),
		maxOutput: r.MaxOutput,
		length:    len(r.Prompt),
		fresh:     true,
		planned:   r.Planned,
		hasher:    kv.Hasher{BlockSize: c.cfg.BlockSize},
	}
	if r.Planned != nil {
		s.maxOutput = len(r.Planned)
	}
	if c.cfg.Policy == TRTLLM {
		// GUARANTEED_NO_EVICT clamps the output at enqueue so the admission
		// reservation can be met; oversized prompts are rejected later.
		if capTok := c.cfg.NumBlocks * c.cfg.BlockSize; s.promptLen < capTok {
			s.maxOutput = min(s.maxOutput, capTok-s.promptLen)
		}
	}
	if c.cfg.PrefixCaching {
		n := s.promptLen / c.cfg.BlockSize
		s.hashes = make([]uint64, 0, n+1)
		s.locals = make([]uint64, 0, n+1)
		s.hasher.Add(r.Prompt, s.addHash)
	}
	c.live++
	c.waiting.pushBack(s)
	return nil
}

func (s *seq) addHash(local, sh uint64) {
	s.hashes = append(s.hashes, sh)
	s.locals = append(s.locals, local)
}

// Metrics returns the core's current load.
func (c *Core) Metrics() Metrics {
	return Metrics{
		Running:      len(c.running),
		Waiting:      c.waiting.len(),
		ActiveBlocks: c.kv.Pool.Active(),
		TotalBlocks:  c.cfg.NumBlocks,
		Preemptions:  c.preemptions,
	}
}

// Pool exposes the KV pool (read-only use: tests and reports).
func (c *Core) Pool() kv.BlockPool { return c.kv.Pool }

// RequestState is a read-only view of one request, for tests and tools.
type RequestState struct {
	Computed, Generated, Length, Preemptions int
	Running, Preempted                       bool
}

// State returns the state of request id.
func (c *Core) State(id uint64) (RequestState, bool) {
	s := c.find(id)
	if s == nil {
		return RequestState{}, false
	}
	return RequestState{
		Computed: s.computed, Generated: s.generated, Length: s.length,
		Preemptions: s.preemptions, Running: s.status == running, Preempted: s.status == preempted,
	}, true
}

// WaitingIDs and RunningIDs list the queues in order (tests and tools).
func (c *Core) WaitingIDs() []uint64 {
	var out []uint64
	for i := range c.waiting.len() {
		out = append(out, c.waiting.at(i).id)
	}
	return out
}

// RunningIDs lists the running queue in order.
func (c *Core) RunningIDs() []uint64 {
	out := make([]uint64, len(c.running))
	for i, s := range c.running {
		out[i] = s.id
	}
	return out
}

// find looks a held request up by id (tests and tools: O(n)).
func (c *Core) find(id uint64) *seq {
	for _, s := range c.running {
		if s.id == id {
			return s
		}
	}
	for i := range c.waiting.len() {
		if s := c.waiting.at(i); s.id == id {
			return s
		}
	}
	return nil
}
