package planner

import (
	"math"
	"testing"
)

// series builds n points of f(t).
func series(n int, f func(t int) float64) []float64 {
	s := make([]float64, n)
	for t := range s {
		s[t] = f(t)
	}
	return s
}

func predictorFor(name string, log bool) predictor {
	c := DefaultConfig()
	c.Predictor, c.PredictorLog1p = name, log
	return newPredictor(&c)
}

func TestPredictors(t *testing.T) {
	flat := series(20, func(int) float64 { return 5 })
	line := series(20, func(t int) float64 { return 10 + 2*float64(t) }) // next: 50
	// Flat at 10, then a ramp of 5 a step to 85: next 90.
	ramp := series(25, func(t int) float64 { return 10 + 5*float64(max(t-9, 0)) })
	step := series(20, func(t int) float64 { return map[bool]float64{true: 2, false: 8}[t < 10] })
	for _, tc := range []struct {
		name   string
		pred   string
		series []float64
		want   float64
		tol    float64
	}{
		{"constant follows a level", "constant", flat, 5, 0},
		{"constant lags a trend", "constant", line, 48, 0},
		{"constant follows a step", "constant", step, 8, 0},
		{"arima keeps a level", "arima", flat, 5, 0},
		{"arima extrapolates a line", "arima", line, 50, 1e-9},
		{"arima picks up a ramp", "arima", ramp, 90, 1e-9},
		{"arima settles after a step", "arima", step, 8, 1e-9},
		{"kalman keeps a level", "kalman", flat, 5, 1e-9},
		{"kalman extrapolates a line", "kalman", line, 50, 1e-9},
		{"kalman tracks a ramp", "kalman", ramp, 90, 3},
		{"kalman settles after a step", "kalman", step, 8, 1},
		{"prophet keeps a level", "prophet", flat, 5, 1e-9},
		{"prophet extrapolates a line", "prophet", line, 50, 1e-9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := predictorFor(tc.pred, false)
			if _, ok := p.next(); ok {
				t.Fatal("a forecast before any observation")
			}
			for _, y := range tc.series {
				p.add(y)
			}
			got, ok := p.next()
			if !ok || math.Abs(got-tc.want) > tc.tol {
				t.Errorf("next = %v (%v), want %v ± %v", got, ok, tc.want, tc.tol)
			}
		})
	}
}

// TestKalmanTrendBeatsConstant: when a level turns into a ramp, the
// Kalman forecast soon beats the last value (off by the whole step) and
// converges on the ramp (with the default q/r it lags for about seven
// points, overshoots by under 0.1 and settles).
func TestKalmanTrendBeatsConstant(t *testing.T) {
	k := predictorFor("kalman", false)
	var err float64
	for i := range 60 {
		y := 100 + 10*float64(max(i-10, 0))
		k.add(y)
		got, _ := k.next()
		err = math.Abs(got - (y + 10))
		if i >= 18 && err >= 10 { // eight points into the ramp
			t.Fatalf("point %d: forecast %v off by %v, no better than the last value", i, got, err)
		}
	}
	if err > 0.5 {
		t.Errorf("after 50 ramp points the forecast is still off by %v", err)
	}
}

func TestKalmanWarmUp(t *testing.T) {
	k := predictorFor("kalman", false) // min points 5
	for i, y := range []float64{1, 2, 3, 4} {
		k.add(y)
		if got, _ := k.next(); got != y {
			t.Errorf("after %d points: %v, want the last value %v", i+1, got, y)
		}
	}
	k.add(5)
	if got, _ := k.next(); math.Abs(got-6) > 1e-9 {
		t.Errorf("after 5 points: %v, want 6", got)
	}
}

func TestLog1p(t *testing.T) {
	// Exponential growth is a line under log1p: ARIMA extrapolates it.
	p := predictorFor("arima", true)
	for i := range 12 {
		p.add(math.Expm1(0.5 * float64(i)))
	}
	if got, want := mustNext(t, p), math.Expm1(6); math.Abs(got-want) > 1e-9*want {
		t.Errorf("log1p arima: %v, want %v", got, want)
	}
	c := predictorFor("constant", true)
	c.add(41)
	if got := mustNext(t, c); math.Abs(got-41) > 1e-12 {
		t.Errorf("log1p constant: %v, want 41", got)
	}
}

func TestForecastsNeverNegative(t *testing.T) {
	down := series(10, func(t int) float64 { return 90 - 10*float64(t) }) // 90 … 0, next −10
	for _, name := range predictorNames {
		p := predictorFor(name, false)
		for _, y := range down {
			p.add(y)
		}
		if got := mustNext(t, p); got < 0 {
			t.Errorf("%s: %v", name, got)
		}
	}
}

func TestHistoryBounded(t *testing.T) {
	a := &arima{}
	for i := range 1000 {
		a.add(float64(i))
	}
	if len(a.h) != historyLen || a.h[historyLen-1] != 999 {
		t.Errorf("history %d points, last %v", len(a.h), a.h[len(a.h)-1])
	}
}

func mustNext(t *testing.T, p predictor) float64 {
	t.Helper()
	v, ok := p.next()
	if !ok {
		t.Fatal("no forecast")
	}
	return v
}
