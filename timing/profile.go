package timing

import (
	"fmt"
	"math"
	"sort"
)

// Profile array keys of a mocker-format perf_data.npz (mocker.md §6.3).
const (
	KeyPrefillISL     = "prefill_isl"             // (N,) total uncached prefill tokens of a pass
	KeyPrefillTTFTMs  = "prefill_ttft_ms"         // (N,) prefill time, ms
	KeyDecodeActiveKV = "decode_active_kv_tokens" // (A,) Σ context tokens of the decode batch
	KeyDecodeContext  = "decode_context_length"   // (C,) mean context length per request
	KeyDecodeITL      = "decode_itl"              // (A, C) decode step time, ms
)

// Interpolated is the profile-derived timing model of mocker.md §6.3:
// piecewise-linear prefill over the uncached tokens of a pass and bilinear
// decode over (active KV tokens, mean context), both extrapolated linearly
// from the edge segment/cell outside the measured grid.
//
// Unlike the reference, which logs an error and falls back to the
// polynomial model when a profile does not load, LoadProfile fails and the
// caller reports the error: a silently different timing source would make
// every downstream number wrong without a trace.
type Interpolated struct {
	Name        string    // source name, for messages
	PrefillT    []float64 // strictly increasing
	PrefillTTFT []float64 // ms, len(PrefillT)
	ActiveKV    []float64 // strictly increasing, len A
	Context     []float64 // strictly increasing, len C
	ITL         []float64 // A×C, row-major: ITL[i*C+j] at (ActiveKV[i], Context[j])
}

// LoadProfile reads a mocker-format .npz profile from data. name (usually
// the file name) prefixes every error, e.g.
// "perf.npz: decode_itl: shape (3,4), want (5,4)". It validates shapes,
// strictly increasing axes with at least two points each, and finite
// values. It never panics on corrupt input.
func LoadProfile(data []byte, name string) (*Interpolated, error) {
	ar, err := openNPZ(data, name)
	if err != nil {
		return nil, err
	}
	get := func(key string) (array, error) { return ar.read(key) }
	vec := func(key string) ([]float64, error) {
		a, err := get(key)
		if err != nil {
			return nil, err
		}
		if len(a.shape) != 1 {
			return nil, fmt.Errorf("%s: %s: shape %s, want a vector", name, key, shapeString(a.shape))
		}
		return a.data, nil
	}
	isl, err := vec(KeyPrefillISL)
	if err != nil {
		return nil, err
	}
	ttft, err := vec(KeyPrefillTTFTMs)
	if err != nil {
		return nil, err
	}
	if len(ttft) != len(isl) {
		return nil, fmt.Errorf("%s: %s: shape (%d,), want (%d,) like %s", name, KeyPrefillTTFTMs, len(ttft), len(isl), KeyPrefillISL)
	}
	kv, err := vec(KeyDecodeActiveKV)
	if err != nil {
		return nil, err
	}
	ctx, err := vec(KeyDecodeContext)
	if err != nil {
		return nil, err
	}
	itl, err := get(KeyDecodeITL)
	if err != nil {
		return nil, err
	}
	if len(itl.shape) != 2 || itl.shape[0] != len(kv) || itl.shape[1] != len(ctx) {
		return nil, fmt.Errorf("%s: %s: shape %s, want (%d,%d)", name, KeyDecodeITL, shapeString(itl.shape), len(kv), len(ctx))
	}
	for _, c := range []struct {
		key  string
		v    []float64
		axis bool
	}{
		{KeyPrefillISL, isl, true},
		{KeyPrefillTTFTMs, ttft, false},
		{KeyDecodeActiveKV, kv, true},
		{KeyDecodeContext, ctx, true},
		{KeyDecodeITL, itl.data, false},
	} {
		if err := checkValues(c.v, c.axis); err != nil {
			return nil, fmt.Errorf("%s: %s: %v", name, c.key, err)
		}
	}
	return &Interpolated{Name: name, PrefillT: isl, PrefillTTFT: ttft, ActiveKV: kv, Context: ctx, ITL: itl.data}, nil
}

func checkValues(v []float64, axis bool) error {
	if axis && len(v) < 2 {
		return fmt.Errorf("need at least 2 points, got %d", len(v))
	}
	for i, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("value %d is %v, want a finite number", i, x)
		}
		if x < 0 {
			return fmt.Errorf("value %d is %v, want ≥ 0", i, x)
		}
		if !axis && x > HorizonMs {
			return fmt.Errorf("value %d is %v ms, want ≤ %.0f (100 years)", i, x, HorizonMs)
		}
		if axis && i > 0 && !(x > v[i-1]) {
			return fmt.Errorf("not strictly increasing at index %d (%v after %v)", i, x, v[i-1])
		}
	}
	return nil
}

// segment returns i such that xs[i] ≤ x ≤ xs[i+1] for x inside the axis,
// and the end segment (0 or len−2) outside it, so the caller's linear
// formula extrapolates.
func segment(xs []float64, x float64) int {
	i := sort.SearchFloat64s(xs, x) - 1 // xs[i] < x ≤ xs[i+1]
	return min(max(i, 0), len(xs)-2)
}

// lerp interpolates (x0,y0)-(x1,y1) at x, written without fused
// multiply-add so results agree across CPUs.
func lerp(x0, x1, y0, y1, x float64) float64 {
	t := (x - x0) / (x1 - x0)
	return y0 + float64(t*(y1-y0))
}

// PrefillMs implements Model: interpolation over T = batch×(isl−prefix).
func (p *Interpolated) PrefillMs(batch, isl, prefix int) float64 {
	if batch <= 0 || isl-prefix <= 0 {
		return 0
	}
	t := float64(batch) * float64(isl-prefix)
	i := segment(p.PrefillT, t)
	return lerp(p.PrefillT[i], p.PrefillT[i+1], p.PrefillTTFT[i], p.PrefillTTFT[i+1], t)
}

// DecodeMs implements Model: bilinear interpolation at (activeKV, ctx).
func (p *Interpolated) DecodeMs(batch, activeKV, ctx, totalKV int) float64 {
	if batch <= 0 {
		return 0
	}
	x, y := float64(activeKV), float64(ctx)
	i, j := segment(p.ActiveKV, x), segment(p.Context, y)
	c := len(p.Context)
	z00, z01 := p.ITL[i*c+j], p.ITL[i*c+j+1]
	z10, z11 := p.ITL[(i+1)*c+j], p.ITL[(i+1)*c+j+1]
	y0, y1 := p.Context[j], p.Context[j+1]
	lo := lerp(y0, y1, z00, z01, y)
	hi := lerp(y0, y1, z10, z11, y)
	return lerp(p.ActiveKV[i], p.ActiveKV[i+1], lo, hi, x)
}

// Arrays returns the profile as NPZ arrays, ready for WriteNPZ.
func (p *Interpolated) Arrays() []NPZArray {
	return []NPZArray{
		{Name: KeyPrefillISL, Data: p.PrefillT},
		{Name: KeyPrefillTTFTMs, Data: p.PrefillTTFT},
		{Name: KeyDecodeActiveKV, Data: p.ActiveKV},
		{Name: KeyDecodeContext, Data: p.Context},
		{Name: KeyDecodeITL, Shape: []int{len(p.ActiveKV), len(p.Context)}, Data: p.ITL},
	}
}
