package timing

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path"
)

// DefaultProfileResolution is the number of grid points per axis that
// ConvertProfileDir writes (the reference's default).
const DefaultProfileResolution = 100

// DefaultMaxDecodeContext is the decode context axis' upper end when a
// profile has no context samples.
const DefaultMaxDecodeContext = 8192

// minPredictSeconds floors every fitted prediction, as the reference does.
const minPredictSeconds = 1e-6

// negativeRequestCoefTolerance: a fitted per-request decode coefficient
// below zero (seconds per request) is clamped to 0 and the decode model
// refitted on KV tokens alone. Tiny negative values are fit noise; larger
// ones mean the profile's concurrency axis carries no usable signal, which
// the clamp handles the same way.
const negativeRequestCoefTolerance = 0.0

// PrefillSample is one prefill forward-pass observation.
type PrefillSample struct {
	Tokens  float64 // sum of uncached prefill tokens in the pass
	Seconds float64 // wall time
}

// DecodeSample is one decode forward-pass observation.
type DecodeSample struct {
	Requests float64 // number of decode requests in the batch
	KVTokens float64 // sum of their context (KV) tokens
	Context  float64 // per-request context length
	Seconds  float64 // step wall time
}

// ProfileFit is the regression the conversion fits (mocker.md §6.3), all
// in seconds: prefill = PrefillA + PrefillB·tokens;
// decode = DecodeA + DecodeB·requests + DecodeC·kv_tokens.
type ProfileFit struct {
	PrefillA, PrefillB          float64
	DecodeA, DecodeB, DecodeC   float64
	RequestCoefClamped          bool // DecodeB was negative and set to 0
	MinTokens, MaxTokens        float64
	MaxKVTokens, MaxContextSeen float64
}

// FitProfile fits the prefill and decode regressions of mocker.md §6.3 to
// the samples. It fails when there is too little data, when the decode fit
// puts a negative coefficient on KV tokens (the reference rejects such a
// fit), or when a sample is not finite.
func FitProfile(pre []PrefillSample, dec []DecodeSample) (ProfileFit, error) {
	var f ProfileFit
	if len(pre) < 2 {
		return f, fmt.Errorf("prefill: need at least 2 samples, got %d", len(pre))
	}
	if len(dec) < 3 {
		return f, fmt.Errorf("decode: need at least 3 samples, got %d", len(dec))
	}
	f.MinTokens, f.MaxTokens = math.Inf(1), math.Inf(-1)
	xs := make([][]float64, len(pre))
	ys := make([]float64, len(pre))
	for i, s := range pre {
		if !finite(s.Tokens, s.Seconds) {
			return f, fmt.Errorf("prefill: sample %d is not finite", i)
		}
		xs[i] = []float64{1, s.Tokens}
		ys[i] = s.Seconds
		f.MinTokens = min(f.MinTokens, s.Tokens)
		f.MaxTokens = max(f.MaxTokens, s.Tokens)
	}
	if !(f.MaxTokens > f.MinTokens) {
		return f, errors.New("prefill: all samples have the same token count")
	}
	c, err := ols(xs, ys)
	if err != nil {
		return f, fmt.Errorf("prefill: %v", err)
	}
	f.PrefillA, f.PrefillB = c[0], c[1]

	xs = make([][]float64, len(dec))
	ys = make([]float64, len(dec))
	for i, s := range dec {
		if !finite(s.Requests, s.KVTokens, s.Context, s.Seconds) {
			return f, fmt.Errorf("decode: sample %d is not finite", i)
		}
		xs[i] = []float64{1, s.Requests, s.KVTokens}
		ys[i] = s.Seconds
		f.MaxKVTokens = max(f.MaxKVTokens, s.KVTokens)
		f.MaxContextSeen = max(f.MaxContextSeen, s.Context)
	}
	if !(f.MaxKVTokens > 0) {
		return f, errors.New("decode: no sample has KV tokens")
	}
	c, err = ols(xs, ys)
	if err != nil {
		return f, fmt.Errorf("decode: %v", err)
	}
	if c[1] < negativeRequestCoefTolerance {
		f.RequestCoefClamped = true
		for i := range xs {
			xs[i] = []float64{1, xs[i][2]}
		}
		c2, err := ols(xs, ys)
		if err != nil {
			return f, fmt.Errorf("decode: %v", err)
		}
		c = []float64{c2[0], 0, c2[1]}
	}
	if c[2] < 0 {
		return f, fmt.Errorf("decode: fit rejected: negative coefficient %.3g s/token on KV tokens", c[2])
	}
	f.DecodeA, f.DecodeB, f.DecodeC = c[0], c[1], c[2]
	return f, nil
}

// PrefillSeconds predicts the prefill wall time of a pass with tokens
// uncached tokens, floored at 1 µs.
func (f ProfileFit) PrefillSeconds(tokens float64) float64 {
	return max(f.PrefillA+float64(f.PrefillB*tokens), minPredictSeconds)
}

// DecodeSeconds predicts the decode step time, floored at 1 µs.
func (f ProfileFit) DecodeSeconds(requests, kvTokens float64) float64 {
	return max(f.DecodeA+float64(f.DecodeB*requests)+float64(f.DecodeC*kvTokens), minPredictSeconds)
}

// Grid samples the fit on the mocker-format grid with res points per axis
// (mocker.md §6.3 steps 2–3).
func (f ProfileFit) Grid(res int) *Interpolated {
	if res < 2 {
		res = DefaultProfileResolution
	}
	maxCtx := f.MaxContextSeen
	if !(maxCtx > 1) {
		maxCtx = DefaultMaxDecodeContext
	}
	p := &Interpolated{
		PrefillT: linspace(f.MinTokens, f.MaxTokens, res),
		ActiveKV: linspace(0, f.MaxKVTokens, res),
		Context:  linspace(1, maxCtx, res),
		ITL:      make([]float64, res*res),
	}
	p.PrefillTTFT = make([]float64, res)
	for i, t := range p.PrefillT {
		p.PrefillTTFT[i] = 1000 * f.PrefillSeconds(t)
	}
	for i, kv := range p.ActiveKV {
		for j, ctx := range p.Context {
			p.ITL[i*res+j] = 1000 * f.DecodeSeconds(max(1, kv/ctx), kv)
		}
	}
	return p
}

// ConvertProfileDir converts a profiler results folder to a mocker-format
// profile (.npz bytes) at the default resolution. readFile reads a file by
// slash-separated path (os.ReadFile in the CLI, a map lookup in the
// browser); a missing file must yield an error wrapping fs.ErrNotExist.
//
// The folder holds selected_prefill_interpolation/raw_data.npz (keys
// prefill_isl, prefill_ttft [ms]) or prefill_raw_data.json, and
// selected_decode_interpolation/raw_data.npz (x_kv_usage,
// y_context_length, z_itl [ms], max_kv_tokens) or decode_raw_data.json.
func ConvertProfileDir(readFile func(name string) ([]byte, error), dir string) ([]byte, error) {
	p, _, err := ConvertProfile(readFile, dir, DefaultProfileResolution)
	if err != nil {
		return nil, err
	}
	return WriteNPZ(p.Arrays())
}

// ConvertProfile is ConvertProfileDir returning the grid and the fit
// instead of encoded bytes.
func ConvertProfile(readFile func(name string) ([]byte, error), dir string, res int) (*Interpolated, ProfileFit, error) {
	pre, err := readPrefillRaw(readFile, dir)
	if err != nil {
		return nil, ProfileFit{}, err
	}
	dec, err := readDecodeRaw(readFile, dir)
	if err != nil {
		return nil, ProfileFit{}, err
	}
	f, err := FitProfile(pre, dec)
	if err != nil {
		return nil, f, fmt.Errorf("%s: %v", dir, err)
	}
	p := f.Grid(res)
	p.Name = dir
	return p, f, nil
}

// readEither reads the .npz form or, when it does not exist, the JSON form.
// It returns the arrays by key.
func readEither(readFile func(string) ([]byte, error), dir, npzRel, jsonRel string, keys []string) (map[string][]float64, string, error) {
	npzPath, jsonPath := path.Join(dir, npzRel), path.Join(dir, jsonRel)
	out := map[string][]float64{}
	data, err := readFile(npzPath)
	if err == nil {
		ar, err := openNPZ(data, npzPath)
		if err != nil {
			return nil, npzPath, err
		}
		for _, k := range keys {
			a, err := ar.read(k)
			if err != nil {
				return nil, npzPath, err
			}
			out[k] = a.data
		}
		return out, npzPath, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, npzPath, fmt.Errorf("%s: %v", npzPath, err)
	}
	data, err = readFile(jsonPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, dir, fmt.Errorf("%s: not a profiler results folder: neither %s nor %s exists", dir, npzRel, jsonRel)
	}
	if err != nil {
		return nil, jsonPath, fmt.Errorf("%s: %v", jsonPath, err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, jsonPath, fmt.Errorf("%s: %v", jsonPath, err)
	}
	for _, k := range keys {
		m, ok := raw[k]
		if !ok {
			return nil, jsonPath, fmt.Errorf("%s: %s: missing", jsonPath, k)
		}
		var v []float64
		if err := json.Unmarshal(m, &v); err != nil {
			var x float64 // max_kv_tokens is a scalar in the JSON form
			if err2 := json.Unmarshal(m, &x); err2 != nil {
				return nil, jsonPath, fmt.Errorf("%s: %s: want numbers: %v", jsonPath, k, err)
			}
			v = []float64{x}
		}
		out[k] = v
	}
	return out, jsonPath, nil
}

func readPrefillRaw(readFile func(string) ([]byte, error), dir string) ([]PrefillSample, error) {
	m, src, err := readEither(readFile, dir, "selected_prefill_interpolation/raw_data.npz", "prefill_raw_data.json",
		[]string{"prefill_isl", "prefill_ttft"})
	if err != nil {
		return nil, err
	}
	isl, ttft := m["prefill_isl"], m["prefill_ttft"]
	if len(isl) != len(ttft) {
		return nil, fmt.Errorf("%s: prefill_ttft: %d values, want %d like prefill_isl", src, len(ttft), len(isl))
	}
	out := make([]PrefillSample, len(isl))
	for i := range isl {
		out[i] = PrefillSample{Tokens: isl[i], Seconds: ttft[i] / 1000}
	}
	return out, nil
}

func readDecodeRaw(readFile func(string) ([]byte, error), dir string) ([]DecodeSample, error) {
	m, src, err := readEither(readFile, dir, "selected_decode_interpolation/raw_data.npz", "decode_raw_data.json",
		[]string{"x_kv_usage", "y_context_length", "z_itl", "max_kv_tokens"})
	if err != nil {
		return nil, err
	}
	x, y, z := m["x_kv_usage"], m["y_context_length"], m["z_itl"]
	if len(y) != len(x) || len(z) != len(x) {
		return nil, fmt.Errorf("%s: x_kv_usage, y_context_length, z_itl: lengths %d, %d, %d differ", src, len(x), len(y), len(z))
	}
	if len(m["max_kv_tokens"]) < 1 || !(m["max_kv_tokens"][0] > 0) {
		return nil, fmt.Errorf("%s: max_kv_tokens: want a positive number", src)
	}
	maxKV := m["max_kv_tokens"][0]
	out := make([]DecodeSample, 0, len(x))
	for i := range x {
		if !(y[i] > 0) {
			return nil, fmt.Errorf("%s: y_context_length: value %d is %v, want > 0", src, i, y[i])
		}
		kv := x[i] * maxKV
		out = append(out, DecodeSample{Requests: kv / y[i], KVTokens: kv, Context: y[i], Seconds: z[i] / 1000})
	}
	return out, nil
}

// linspace is numpy.linspace(lo, hi, n): endpoints exact.
func linspace(lo, hi float64, n int) []float64 {
	out := make([]float64, n)
	step := (hi - lo) / float64(n-1)
	for i := range out {
		out[i] = lo + float64(float64(i)*step)
	}
	out[n-1] = hi
	return out
}

func finite(xs ...float64) bool {
	for _, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}

// ols solves least squares min‖Xc − y‖ by Householder QR (numerically
// stable for the badly scaled columns of a profile: 1, requests, tokens).
// Columns are scaled to unit norm first.
func ols(x [][]float64, y []float64) ([]float64, error) {
	m, n := len(x), len(x[0])
	if m < n {
		return nil, fmt.Errorf("need at least %d samples, got %d", n, m)
	}
	a := make([][]float64, m)
	for i := range x {
		a[i] = append([]float64(nil), x[i]...)
	}
	b := append([]float64(nil), y...)
	scale, err := unitColumns(a, n)
	if err != nil {
		return nil, err
	}
	for k := range n {
		if err := householder(a, b, k, n); err != nil {
			return nil, err
		}
	}
	c, err := backSubstitute(a, b, n)
	if err != nil {
		return nil, err
	}
	for j := range c {
		c[j] /= scale[j]
	}
	return c, nil
}

// unitColumns scales each of a's n columns to unit norm in place and
// returns the scales.
func unitColumns(a [][]float64, n int) ([]float64, error) {
	m := len(a)
	scale := make([]float64, n)
	for j := range n {
		s := 0.0
		for i := range m {
			s += a[i][j] * a[i][j]
		}
		s = math.Sqrt(s)
		if s == 0 {
			return nil, errors.New("degenerate samples (a regressor is always 0)")
		}
		scale[j] = s
		for i := range m {
			a[i][j] /= s
		}
	}
	return scale, nil
}

// householder applies the reflection that zeroes column k of a below the
// diagonal to columns k…n−1 of a and to b.
func householder(a [][]float64, b []float64, k, n int) error {
	m := len(a)
	norm := 0.0
	for i := k; i < m; i++ {
		norm += a[i][k] * a[i][k]
	}
	norm = math.Sqrt(norm)
	if norm < 1e-12 {
		return errors.New("degenerate samples (regressors are collinear)")
	}
	if a[k][k] > 0 {
		norm = -norm
	}
	// v = a[k:,k] − norm·e1
	v := make([]float64, m-k)
	for i := k; i < m; i++ {
		v[i-k] = a[i][k]
	}
	v[0] -= norm
	vv := 0.0
	for _, t := range v {
		vv += t * t
	}
	if vv == 0 {
		return nil
	}
	for j := k; j < n; j++ {
		d := 0.0
		for i := k; i < m; i++ {
			d += v[i-k] * a[i][j]
		}
		d = 2 * d / vv
		for i := k; i < m; i++ {
			a[i][j] -= d * v[i-k]
		}
	}
	d := 0.0
	for i := k; i < m; i++ {
		d += v[i-k] * b[i]
	}
	d = 2 * d / vv
	for i := k; i < m; i++ {
		b[i] -= d * v[i-k]
	}
	return nil
}

// backSubstitute solves the upper-triangular system R c = b (R the top n
// rows of a).
func backSubstitute(a [][]float64, b []float64, n int) ([]float64, error) {
	c := make([]float64, n)
	for k := n - 1; k >= 0; k-- {
		s := b[k]
		for j := k + 1; j < n; j++ {
			s -= a[k][j] * c[j]
		}
		if math.Abs(a[k][k]) < 1e-12 {
			return nil, errors.New("degenerate samples (regressors are collinear)")
		}
		c[k] = s / a[k][k]
	}
	return c, nil
}
