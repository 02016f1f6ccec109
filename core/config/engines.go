package config

import (
	"fmt"
	"math"
)

// SGLang holds the SGLang scheduler's knobs (spec §3.1), under
// engine.workers.<role>.sglang. The page size is kv_cache.block_size
// (SGLang's default 1). Ignored by the other backends.
type SGLang struct {
	SchedulePolicy           string  `yaml:"schedule_policy" json:"schedule_policy"` // fifo (alias fcfs) | lpm
	MaxPrefillTokens         int     `yaml:"max_prefill_tokens" json:"max_prefill_tokens"`
	ChunkedPrefillSize       int     `yaml:"chunked_prefill_size" json:"chunked_prefill_size"`
	ClipMaxNewTokens         int     `yaml:"clip_max_new_tokens" json:"clip_max_new_tokens"`
	ScheduleConservativeness float64 `yaml:"schedule_conservativeness" json:"schedule_conservativeness"`
}

// DefaultSGLang returns the reference defaults.
func DefaultSGLang() SGLang {
	return SGLang{SchedulePolicy: "fifo", MaxPrefillTokens: 16384, ChunkedPrefillSize: 8192, ClipMaxNewTokens: 4096, ScheduleConservativeness: 1}
}

func (s *SGLang) validate(path string, blockSize int) error {
	path += ".sglang"
	switch {
	case s.SchedulePolicy != "fifo" && s.SchedulePolicy != "fcfs" && s.SchedulePolicy != "lpm":
		return fmt.Errorf("%s.schedule_policy: must be one of fifo, fcfs, lpm, got %q", path, s.SchedulePolicy)
	case s.MaxPrefillTokens < 1:
		return fmt.Errorf("%s.max_prefill_tokens: must be ≥ 1, got %d", path, s.MaxPrefillTokens)
	case s.ChunkedPrefillSize < 1:
		return fmt.Errorf("%s.chunked_prefill_size: must be ≥ 1, got %d", path, s.ChunkedPrefillSize)
	case blockSize > 0 && s.ChunkedPrefillSize%blockSize != 0:
		return fmt.Errorf("%s.chunked_prefill_size: must be a multiple of kv_cache.block_size (the page size, %d), got %d", path, blockSize, s.ChunkedPrefillSize)
	case s.ClipMaxNewTokens < 1:
		return fmt.Errorf("%s.clip_max_new_tokens: must be ≥ 1, got %d", path, s.ClipMaxNewTokens)
	case math.IsNaN(s.ScheduleConservativeness) || s.ScheduleConservativeness < 0 || s.ScheduleConservativeness > 1:
		return fmt.Errorf("%s.schedule_conservativeness: must be in [0, 1], got %v", path, s.ScheduleConservativeness)
	}
	return nil
}

// Speculation is speculative decoding (MTP/Eagle burst sampling, spec §2.7,
// §6.5), under engine.speculation: every decode forward of a request emits
// 1 + (leading accepted drafts) tokens.
type Speculation struct {
	Kind                 string    `yaml:"kind" json:"kind"`                                     // none | mtp | eagle (both burst sampling)
	NumSpeculativeTokens int       `yaml:"num_speculative_tokens" json:"num_speculative_tokens"` // drafts per forward, 1..5
	AcceptanceRates      []float64 `yaml:"acceptance_rates" json:"acceptance_rates"`             // conditional, each in [0,1]; padded with 0 / truncated
	Seed                 uint64    `yaml:"seed" json:"seed"`                                     // per-worker/rank streams derive from it
}

// DefaultSpeculation is speculation off, with the reference's seed.
func DefaultSpeculation() Speculation { return Speculation{Kind: "none", Seed: 42} }

// Enabled reports whether speculation is on.
func (s *Speculation) Enabled() bool { return s.Kind != "none" }

func (s *Speculation) validate(decodeSpeedup float64) error {
	const p = "engine.speculation"
	switch s.Kind {
	case "none":
		return nil
	case "mtp", "eagle":
	default:
		return fmt.Errorf("%s.kind: must be one of none, mtp, eagle, got %q", p, s.Kind)
	}
	if s.NumSpeculativeTokens < 1 || s.NumSpeculativeTokens > 5 {
		return fmt.Errorf("%s.num_speculative_tokens: must be in 1..5, got %d", p, s.NumSpeculativeTokens)
	}
	for i, r := range s.AcceptanceRates {
		if math.IsNaN(r) || math.IsInf(r, 0) || r < 0 || r > 1 {
			return fmt.Errorf("%s.acceptance_rates[%d]: must be a finite number in [0, 1], got %v", p, i, r)
		}
	}
	if decodeSpeedup != 1 {
		return fmt.Errorf("%s: needs engine.workers.aggregated.timing.decode_speedup = 1 (bursts model the speed-up), got %v", p, decodeSpeedup)
	}
	return nil
}
