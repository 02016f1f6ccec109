package config

import (
	"fmt"

	"github.com/dynosim/dynosim-web/core/engine"
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

// DefaultSGLang returns the engine's defaults (engine.DefaultSGLang).
func DefaultSGLang() SGLang {
	d := engine.DefaultSGLang()
	return SGLang{
		SchedulePolicy: "fifo", MaxPrefillTokens: d.MaxPrefillTokens, ChunkedPrefillSize: d.ChunkedPrefillSize,
		ClipMaxNewTokens: d.ClipMaxNewTokens, ScheduleConservativeness: d.Conservativeness,
	}
}

// validate checks what the engine cannot: the policy names, and that the
// budgets are given (the engine reads 0 as its default; the YAML has the
// default written in Default).
func (s *SGLang) validate(path string) error {
	path += ".sglang"
	switch {
	case s.SchedulePolicy != "fifo" && s.SchedulePolicy != "fcfs" && s.SchedulePolicy != "lpm":
		return fmt.Errorf("%s.schedule_policy: must be one of fifo, fcfs, lpm, got %q", path, s.SchedulePolicy)
	case s.MaxPrefillTokens < 1:
		return fmt.Errorf("%s.max_prefill_tokens: must be ≥ 1, got %d", path, s.MaxPrefillTokens)
	case s.ChunkedPrefillSize < 1:
		return fmt.Errorf("%s.chunked_prefill_size: must be ≥ 1, got %d", path, s.ChunkedPrefillSize)
	case s.ClipMaxNewTokens < 1:
		return fmt.Errorf("%s.clip_max_new_tokens: must be ≥ 1, got %d", path, s.ClipMaxNewTokens)
	}
	return nil
}

// sglangLoop is the SGLang core's pass shape for role: the reference's
// additive pass under engine.semantics mocker (mocker.md §3.4), SGLang's
// event loop under real, mixing chunks with scheduler.enable_mixed_chunk
// (core/engine/sglang_loop.go).
func (c *Config) sglangLoop(role *Role) engine.SGLangLoop {
	switch {
	case c.Engine.Semantics == "mocker":
		return engine.AdditivePass
	case role.Scheduler.EnableMixedChunk:
		return engine.MixedChunk
	}
	return engine.PrefillFirst
}

// validateMixedChunk refuses scheduler.enable_mixed_chunk where it would
// mean nothing: it is SGLang's flag (vLLM and TensorRT-LLM always batch
// prefill chunks with decodes), the reference mocker's pass already holds
// both, SGLang turns it off under speculative decoding (server_args.py:
// "Mixed chunked prefill is disabled because of using eagle speculative
// decoding"), and a disaggregated worker has only one of the two parts.
func (c *Config) validateMixedChunk(path string, r *Role) error {
	if !r.Scheduler.EnableMixedChunk {
		return nil
	}
	key := path + ".scheduler.enable_mixed_chunk"
	switch {
	case c.Engine.Backend != "sglang":
		return fmt.Errorf("%s: SGLang's --enable-mixed-chunk, backend sglang only (the %s core always runs prefill chunks and decodes in one pass); leave it false", key, c.Engine.Backend)
	case c.Engine.Semantics == "mocker":
		return fmt.Errorf("%s: needs engine.semantics real (under mocker every pass already runs the prefill batch and then the decode step, mocker.md §3.4)", key)
	case c.Engine.Speculation.Enabled():
		return fmt.Errorf("%s: not with engine.speculation (SGLang turns mixed chunks off under speculative decoding)", key)
	case c.Engine.Mode == "disaggregated":
		return fmt.Errorf("%s: has no effect on a disaggregated worker (a prefill worker has no decode batch, a decode worker no prefill); use mode aggregated or leave it false", key)
	}
	return nil
}

// Speculation is speculative decoding (MTP/Eagle burst sampling, spec §2.7,
// §6.5), under engine.speculation: every decode forward of a request emits
// 1 + (leading accepted drafts) tokens.
type Speculation struct {
	Kind                 string    `yaml:"kind" json:"kind"`                                     // none | mtp | eagle (a 1-layer head drafts) | ngram (CPU prompt lookup drafts); core/sim prices each
	NumSpeculativeTokens int       `yaml:"num_speculative_tokens" json:"num_speculative_tokens"` // drafts per forward, 1..5
	AcceptanceRates      []float64 `yaml:"acceptance_rates" json:"acceptance_rates"`             // conditional, each in [0,1]; padded with 0 / truncated
	Seed                 uint64    `yaml:"seed" json:"seed"`                                     // per-worker/rank streams derive from it
}

// DefaultSpeculation is speculation off, with the reference's seed.
func DefaultSpeculation() Speculation { return Speculation{Kind: "none", Seed: 42} }

// Enabled reports whether speculation is on.
func (s *Speculation) Enabled() bool { return s.Kind != "none" }

// validate checks the kind and the engine's bounds
// (engine.NormalizeAcceptRates); the engine's role check adds the rule on
// timing.decode_speedup.
func (s *Speculation) validate() error {
	const p = "engine.speculation"
	switch s.Kind {
	case "none":
		return nil
	case "mtp", "eagle", "ngram":
	default:
		// draft_model (a separate draft LLM) is not modelled yet: refused
		// rather than priced as something it is not (issue 30 item 4).
		return fmt.Errorf("%s.kind: must be one of none, mtp, eagle, ngram, got %q", p, s.Kind)
	}
	if _, err := engine.NormalizeAcceptRates(s.NumSpeculativeTokens, s.AcceptanceRates); err != nil {
		return engineErr(p, err)
	}
	return nil
}
