package planner

import "math"

// Throughput-based scaling's load predictors (Dynamo's load_predictor):
// each forecasts the next interval's value of one traffic series
// (request rate, mean ISL, mean OSL) from the values seen so far. All are
// deterministic closed-form or recursive fits; none draws random numbers
// or searches a model space, so a replay repeats them exactly.

// predictor forecasts one series.
type predictor interface {
	// add appends an observation (finite, ≥ 0).
	add(y float64)
	// next is the forecast for the next interval; false before any
	// observation.
	next() (float64, bool)
}

// historyLen bounds the points the windowed predictors keep.
const historyLen = 64

// arimaMinPoints is the history the ARIMA fit needs (three differences,
// two lagged pairs); with fewer points it forecasts the last value.
const arimaMinPoints = 4

// newPredictor builds the configured predictor, wrapped in the log1p
// transform when asked (forecast log(1+y), answer e^z − 1: multiplicative
// changes become additive, which suits request rates spanning decades).
func newPredictor(c *Config) predictor {
	var p predictor
	switch c.Predictor {
	case "arima":
		p = &arima{}
	case "kalman":
		p = &kalman{qLevel: c.KalmanQLevel, qTrend: c.KalmanQTrend, r: c.KalmanR, minPoints: c.KalmanMinPoints}
	case "prophet":
		w := c.ProphetWindow
		if w == 0 {
			w = 50 // unset: Dynamo's default
		}
		p = &trend{window: w}
	default:
		p = &constant{}
	}
	if c.PredictorLog1p {
		p = log1p{p}
	}
	return p
}

// constant forecasts the last value: next = y_n.
type constant struct {
	last float64
	n    int
}

func (c *constant) add(y float64) { c.last, c.n = y, c.n+1 }

func (c *constant) next() (float64, bool) { return c.last, c.n > 0 }

// history keeps the last historyLen points.
type history []float64

func (h *history) push(y float64) {
	if len(*h) == historyLen {
		copy(*h, (*h)[1:])
		*h = (*h)[:historyLen-1]
	}
	*h = append(*h, y)
}

// arima is an ARIMA(1,1,0) model without drift, fitted by conditional
// least squares over the kept history: the differences d_t = y_t − y_{t−1}
// follow d_t = φ·d_{t−1} + ε, with
//
//	φ = Σ d_{t−1}·d_t / Σ d_{t−1}²   (clamped to [−1, 1]: no explosive fit)
//	next = y_n + φ·d_n
//
// A linear series has φ = 1 and is extrapolated exactly; a level series
// (or one that stepped once) has φ ≈ 0 and keeps its last value. This
// stands in for Dynamo's auto-ARIMA, whose order search is not
// reproducible here; the order is fixed and documented instead.
type arima struct{ h history }

func (a *arima) add(y float64) { a.h.push(y) }

func (a *arima) next() (float64, bool) {
	h := a.h
	n := len(h)
	if n == 0 {
		return 0, false
	}
	if n < arimaMinPoints {
		return h[n-1], true
	}
	var num, den float64
	for t := 2; t < n; t++ {
		prev, cur := h[t-1]-h[t-2], h[t]-h[t-1]
		num += float64(prev * cur)
		den += float64(prev * prev)
	}
	phi := 0.0
	if den > 0 {
		phi = min(max(num/den, -1), 1)
	}
	return max(h[n-1]+float64(phi*(h[n-1]-h[n-2])), 0), true
}

// kalman is a local-linear-trend Kalman filter: the state is (level ℓ,
// trend τ) with
//
//	ℓ_t = ℓ_{t−1} + τ_{t−1} + w_ℓ,  τ_t = τ_{t−1} + w_τ,  y_t = ℓ_t + v
//
// w_ℓ ~ N(0, kalman_q_level), w_τ ~ N(0, kalman_q_trend), v ~ N(0,
// kalman_r). It starts from the first two points (ℓ = y₁, τ = y₁ − y₀,
// with their covariance [[r, r], [r, 2r]]) and forecasts ℓ + τ; until
// kalman_min_points observations it forecasts the last value (Dynamo's
// warm-up).
type kalman struct {
	qLevel, qTrend, r float64
	minPoints         int

	n             int
	first, last   float64
	level, slope  float64
	p00, p01, p11 float64 // the state covariance (symmetric)
}

func (k *kalman) add(y float64) {
	k.n++
	switch k.n {
	case 1:
		k.first, k.last = y, y
		return
	case 2:
		k.level, k.slope = y, y-k.first
		k.p00, k.p01, k.p11 = k.r, k.r, 2*k.r
		k.last = y
		return
	}
	k.last = y
	// Predict: x ← F·x, P ← F·P·Fᵀ + Q with F = [[1, 1], [0, 1]].
	k.level += k.slope
	k.p00, k.p01 = k.p00+2*k.p01+k.p11+k.qLevel, k.p01+k.p11
	k.p11 += k.qTrend
	// Update with y (H = [1, 0]): S = P₀₀ + r, K = P·Hᵀ/S.
	s := k.p00 + k.r
	if !(s > 0) {
		return // no noise anywhere: the state is exact already
	}
	k0, k1 := k.p00/s, k.p01/s
	innov := y - k.level
	k.level += float64(k0 * innov)
	k.slope += float64(k1 * innov)
	k.p11 -= float64(k1 * k.p01)
	k.p00 *= 1 - k0
	k.p01 *= 1 - k0
}

func (k *kalman) next() (float64, bool) {
	switch {
	case k.n == 0:
		return 0, false
	case k.n < max(k.minPoints, 2):
		return k.last, true
	}
	return max(k.level+k.slope, 0), true
}

// trend stands in for Prophet (whose fit is a Bayesian optimisation, not
// reproducible here): the least-squares line through the last window
// points (t = 0..m−1), evaluated one step ahead at t = m. With one point
// it forecasts that point.
type trend struct {
	window int
	h      history
}

func (t *trend) add(y float64) { t.h.push(y) }

func (t *trend) next() (float64, bool) {
	h := t.h
	if w := min(t.window, historyLen); len(h) > w {
		h = h[len(h)-w:]
	}
	m := len(h)
	switch m {
	case 0:
		return 0, false
	case 1:
		return h[0], true
	}
	// The plain least-squares line (a negative slope is a real trend
	// here, unlike a pass-time model's).
	mx, my := float64(m-1)/2, 0.0
	for _, y := range h {
		my += y
	}
	my /= float64(m)
	var sxx, sxy float64
	for i, y := range h {
		dx := float64(i) - mx
		sxx += float64(dx * dx)
		sxy += float64(dx * (y - my))
	}
	b := sxy / sxx
	return max(my+float64(b*(float64(m)-mx)), 0), true
}

// log1p forecasts log(1 + y) with the wrapped predictor.
type log1p struct{ p predictor }

func (l log1p) add(y float64) { l.p.add(math.Log1p(y)) }

func (l log1p) next() (float64, bool) {
	z, ok := l.p.next()
	return max(math.Expm1(z), 0), ok
}
