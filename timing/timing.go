// Package timing prices simulated engine passes.
//
// A Model turns the shape of one pass (prefill work, decode batch) into a
// duration in milliseconds. Engines quantize those milliseconds to whole
// nanoseconds (Time) once per duration, as the reference simulator does, so
// reports agree with it to about 1e-6 ms.
package timing

import (
	"math"
	"strconv"
)

// Time is a point or span of virtual time in nanoseconds. int64 nanoseconds
// cover 292 years, far beyond any trace.
type Time int64

// Ms returns t in milliseconds.
func (t Time) Ms() float64 { return float64(t) / 1e6 }

// Horizon is the longest virtual time a run may reach: 100 years (of 365.25
// days). Durations and times past it saturate at it (see FromNs), so
// sums of two stay far inside int64 (292 years), and the replay ends a run
// whose clock would pass it with an error.
const Horizon Time = 100 * 36525 * 24 * 3600 * 1e9 / 100

// HorizonMs is Horizon in milliseconds.
const HorizonMs = float64(Horizon / 1e6)

// FromMs converts milliseconds to Time, rounding to the nearest nanosecond.
// It is defined for every float: values past ±Horizon and NaN saturate
// (NaN at Horizon), so a float is never converted out of int64's range
// (which amd64 and wasm treat differently).
func FromMs(ms float64) Time { return FromNs(ms * 1e6) }

// FromNs converts nanoseconds to Time like FromMs.
func FromNs(ns float64) Time {
	switch {
	case ns >= float64(Horizon) || ns != ns:
		return Horizon
	case ns <= -float64(Horizon):
		return -Horizon
	}
	// math.Round then the conversion, done as a truncation corrected by
	// the fraction it left (issue 34 item 1: math.Round is not an
	// intrinsic, and every pass rounds twice). Exact: the fraction
	// ns − trunc(ns) is computed without error (both share a binade, or
	// the truncation is 0), so halves go away from zero as in math.Round.
	t := Time(ns)
	if f := ns - float64(t); f >= 0.5 {
		t++
	} else if f <= -0.5 {
		t--
	}
	return t
}

// CeilNs is the first nanosecond at or after ns, saturating like FromNs
// (whose rounding leaves the whole number Ceil gives as it is).
func CeilNs(ns float64) Time { return FromNs(math.Ceil(ns)) }

// String formats t in milliseconds.
func (t Time) String() string { return strconv.FormatFloat(t.Ms(), 'f', -1, 64) + "ms" }

// Model prices one engine pass. Implementations must be pure functions of
// their arguments so replays stay deterministic.
type Model interface {
	// PrefillMs is the time of the prefill part of a pass with batch
	// scheduled prefill items whose mean total length is isl tokens, of
	// which prefix tokens (mean) were already computed or cached.
	PrefillMs(batch, isl, prefix int) float64
	// DecodeMs is the time of one decode step over batch sequences holding
	// activeKV context tokens in total (mean ctx each), on a pool of
	// totalKV token slots.
	DecodeMs(batch, activeKV, ctx, totalKV int) float64
}

// Mixed is a Model that prices a pass holding both prefill and decode
// work as one forward over all its tokens, not as the sum of a prefill
// pass and a decode step (which would stream the weights twice). Models
// without it keep the reference's sum.
type Mixed interface {
	Model
	// MixedMs is PrefillMs's and DecodeMs's work done in one forward.
	MixedMs(batch, isl, prefix, decBatch, activeKV, ctx, totalKV int) float64
}

// Polynomial is the reference's uncalibrated synthetic baseline: prefill is
// quadratic in the uncached tokens of the pass, decode is quadratic in the
// KV-cache utilisation.
type Polynomial struct{}

// PrefillMs implements Model.
func (Polynomial) PrefillMs(batch, isl, prefix int) float64 {
	if batch <= 0 || isl-prefix <= 0 {
		return 0
	}
	t := float64(batch * (isl - prefix))
	// Explicit conversions keep the compiler from fusing multiply-adds,
	// which would change the last bits on some CPUs.
	return float64(4.209989e-7*t*t) + float64(1.518344e-2*t) + 16.50142
}

// DecodeMs implements Model.
func (Polynomial) DecodeMs(batch, activeKV, ctx, totalKV int) float64 {
	p := 1.0
	if totalKV > 0 {
		p = min(float64(activeKV)/float64(totalKV), 1)
	}
	return float64(-25.74*p*p) + float64(54.01*p) + 5.74
}

// Fixed charges a constant time per prefill pass and per decode step.
type Fixed struct{ Prefill, Decode float64 }

// PrefillMs implements Model.
func (f Fixed) PrefillMs(batch, isl, prefix int) float64 {
	if batch <= 0 || isl-prefix <= 0 {
		return 0
	}
	return f.Prefill
}

// DecodeMs implements Model.
func (f Fixed) DecodeMs(batch, activeKV, ctx, totalKV int) float64 { return f.Decode }

// Scale holds the speed-up knobs of a worker. A ratio ≤ 0 means "unscaled",
// as in the reference (not "infinitely fast").
type Scale struct {
	Speedup       float64 // divides prefill and decode time
	DecodeSpeedup float64 // additionally divides decode time
}

// Prefill prices the prefill part of a pass: the model's value clamped at
// zero, quantized to nanoseconds, then divided by the speed-up and quantized
// again.
func (s Scale) Prefill(m Model, batch, isl, prefix int) Time {
	if batch == 0 {
		return 0
	}
	return quantize(max(m.PrefillMs(batch, isl, prefix), 0), s.Speedup)
}

// Decode prices one decode step. The 1 ms floor applies before the speed-up
// division (a reference quirk kept on purpose: token-emitting steps must not
// collapse onto one timestamp).
func (s Scale) Decode(m Model, batch, activeKV, ctx, totalKV int) Time {
	if batch == 0 {
		return 0
	}
	return quantize(max(m.DecodeMs(batch, activeKV, ctx, totalKV), 1), s.Speedup*s.DecodeSpeedup)
}

// Mixed prices a pass of both kinds: the model's value, floored like a
// decode step, over the speed-up (decode_speedup, which divides only
// decode time, scales the decode share of the sum it replaces).
func (s Scale) Mixed(m Mixed, batch, isl, prefix, decBatch, activeKV, ctx, totalKV int) Time {
	ms := max(m.MixedMs(batch, isl, prefix, decBatch, activeKV, ctx, totalKV), 1)
	if d := s.DecodeSpeedup; d > 0 && d != 1 {
		p, q := m.PrefillMs(batch, isl, prefix), m.DecodeMs(decBatch, activeKV, ctx, totalKV)
		if p+q > 0 {
			ms *= (p + q/d) / (p + q)
		}
	}
	return quantize(ms, s.Speedup)
}

// quantize rounds ms to nanoseconds, divides by ratio (> 0) and rounds
// again. A NaN, infinite or huge duration saturates at Horizon, so the
// replay stops the run with an error instead of wrapping the clock.
func quantize(ms, ratio float64) Time {
	d := FromMs(ms)
	// ratio 1 (the default) leaves d as it is while float64(d) is exact.
	if ratio > 0 && d > 0 && (ratio != 1 || d >= 1<<53) {
		d = FromNs(float64(d) / ratio)
	}
	return d
}
