package engine

import "math"

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
	// Loop is the shape of a pass (sglang_loop.go). The zero value is the
	// reference's; core/config sets it from engine.semantics and
	// scheduler.enable_mixed_chunk.
	Loop SGLangLoop
}

// SGLangLoop is the shape of one SGLang pass.
type SGLangLoop uint8

const (
	// AdditivePass is the reference mocker's pass: the prefill batch, then
	// a decode step of every running request (the prompts it completed
	// included), priced as the sum of the two (mocker.md §3.4;
	// engine.semantics mocker).
	AdditivePass SGLangLoop = iota
	// PrefillFirst is SGLang's scheduler event loop (engine.semantics
	// real): a pass that can form a new prefill batch runs it alone, the
	// decode batch waiting, and that forward samples each completed
	// prompt's first token; otherwise the pass is a decode step.
	PrefillFirst
	// MixedChunk is PrefillFirst with SGLang's --enable-mixed-chunk: the
	// prefill batch and a decode step of the running batch are one forward.
	MixedChunk
)

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
