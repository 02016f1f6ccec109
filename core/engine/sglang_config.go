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
