package planner

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// Config is the planner: section of the YAML, with a preset applied.
type Config struct {
	Load                 bool    // load-based scaling (enable_load_scaling)
	Throughput           bool    // throughput-based scaling (enable_throughput_scaling)
	LoadIntervalS        float64 // load_adjustment_interval_seconds (5)
	ThroughputIntervalS  float64 // throughput_adjustment_interval_seconds (180)
	TTFTMs, ITLMs        float64 // the SLA (evaluation.sla); throughput scaling needs both; load scaling uses what is set
	ScaleDownSensitivity float64 // load_scaling_down_sensitivity, percent (80): scale down only if the estimate at one worker fewer stays under this share of the SLA
	// ScaleDownTicks (load_scaling_down_ticks, 3): load ticks in a row
	// that must find one worker fewer enough before one is given back.
	ScaleDownTicks  int
	MinObservations int    // load_min_observations (5): passes needed before load scaling acts
	MaxFPMSamples   int    // max_num_fpm_samples (64): passes kept per worker for the regressions
	FPMBucketSize   int    // fpm_sample_bucket_size (16): buckets that spread the kept passes over the load range (a perfect square)
	Predictor       string // load_predictor: constant | arima | kalman | prophet (a linear trend over the last ProphetWindow points)
	PredictorLog1p  bool   // load_predictor_log1p

	KalmanQLevel, KalmanQTrend, KalmanR float64 // 1.0, 0.1, 10.0
	KalmanMinPoints                     int     // 5
	ProphetWindow                       int     // prophet_window_size (50; 0: 50): points the prophet fallback fits
	MaxGPUs                             int     // max_num_gpus (8): the total GPU ceiling over all pools

	// ScaleDownCooldownS (0: DefaultScaleDownCooldownS) is the hysteresis
	// of load-based scaling: no scale-down within this many seconds of a
	// scale-up of the same pool (issue 31 item 1: a worker added at a load
	// step was drained 75 s later while the load was still high).
	ScaleDownCooldownS float64
	// FPMHorizonS (0: DefaultFPMHorizonS) is how far back kept passes
	// inform the regressions: older ones retire whatever their bucket, so
	// the estimates follow the load down (issue 31 item 1: passes of a
	// past peak held the fit, and two workers, for 600 s after it).
	FPMHorizonS float64
}

// The hysteresis and the regressions' memory when Config leaves them 0.
// The cool-down is 120 s, the bound issue 31 item 1 asks for (no drain
// within 120 s of an add); it outlasts a worker's startup of a minute or
// so and the few load ticks a new worker's backlog takes to clear. The
// horizon is one slow-loop interval (throughput_adjustment_interval_seconds'
// default, 180 s): the fast loop remembers a load level no longer than
// the slow loop takes to see it once. Dynamo's load-based planner only
// says "±1 per interval, no new action until the previous one completes"
// (Planner Design); a scale-down stabilization window after a change is
// what Kubernetes' HPA does (behavior.scaleDown.stabilizationWindowSeconds,
// 300 s by default).
const (
	DefaultScaleDownCooldownS = 120
	DefaultFPMHorizonS        = 180
)

// cooldownMs and horizonMs are the two in ms, defaults applied.
func (c *Config) cooldownMs() float64 {
	return 1000 * orDefault(c.ScaleDownCooldownS, DefaultScaleDownCooldownS)
}
func (c *Config) horizonMs() float64 { return 1000 * orDefault(c.FPMHorizonS, DefaultFPMHorizonS) }

func orDefault(v, d float64) float64 {
	if v == 0 {
		return d
	}
	return v
}

// DefaultConfig returns the spec's defaults: throughput scaling on, load
// scaling off, 180 s / 5 s, the ARIMA predictor, 8 GPUs. The SLA is not
// the planner's to default: it comes from evaluation.sla.
func DefaultConfig() Config {
	return Config{
		Throughput:           true,
		LoadIntervalS:        5,
		ThroughputIntervalS:  180,
		ScaleDownSensitivity: 80,
		ScaleDownTicks:       3,
		MinObservations:      5,
		MaxFPMSamples:        64,
		FPMBucketSize:        16,
		Predictor:            "arima",
		KalmanQLevel:         1.0,
		KalmanQTrend:         0.1,
		KalmanR:              10.0,
		KalmanMinPoints:      5,
		ProphetWindow:        50,
		MaxGPUs:              8,
	}
}

// preset is one scaling_policy preset.
type preset struct {
	name             string
	load, throughput bool
	thrS, loadS      float64
}

// presets are named family_throughputInterval_loadInterval; "disabled"
// turns both modes off and leaves the intervals alone.
var presets = []preset{
	{"disabled", false, false, 0, 0},
	{"throughput_180_5", false, true, 180, 5},
	{"throughput_600_5", false, true, 600, 5},
	{"load_180_5", true, false, 180, 5},
	{"load_180_10", true, false, 180, 10},
	{"hybrid_180_5", true, true, 180, 5},
	{"hybrid_600_5", true, true, 600, 5},
}

// PresetNames are the scaling_policy presets, in the spec's order.
var PresetNames = func() []string {
	names := make([]string, len(presets))
	for i, p := range presets {
		names[i] = p.name
	}
	return names
}()

// The keys a scaling_policy preset sets (YAML names under planner:).
const (
	KeyLoad               = "enable_load_scaling"
	KeyThroughput         = "enable_throughput_scaling"
	KeyLoadInterval       = "load_adjustment_interval_seconds"
	KeyThroughputInterval = "throughput_adjustment_interval_seconds"
)

// ApplyPreset sets c's scaling modes and intervals from the named
// scaling_policy preset.
func ApplyPreset(name string, c *Config) error { return ApplyPresetExcept(name, c, nil) }

// ApplyPresetExcept is ApplyPreset for a config that wrote some of the
// preset's keys itself: written(key) reports whether planner.<key> was
// given explicitly (KeyLoad, KeyThroughput, KeyLoadInterval,
// KeyThroughputInterval), and an explicit key wins over the preset. A
// preset is a set of defaults, not a lock: `scaling_policy: load_180_5,
// load_adjustment_interval_seconds: 1` is load-based scaling every second.
// (Before issue 29 the preset silently overwrote explicit intervals.)
// written nil: nothing was written.
func ApplyPresetExcept(name string, c *Config, written func(key string) bool) error {
	keep := func(key string) bool { return written != nil && written(key) }
	for _, p := range presets {
		if p.name != name {
			continue
		}
		if !keep(KeyLoad) {
			c.Load = p.load
		}
		if !keep(KeyThroughput) {
			c.Throughput = p.throughput
		}
		if p.thrS > 0 && !keep(KeyThroughputInterval) {
			c.ThroughputIntervalS = p.thrS
		}
		if p.thrS > 0 && !keep(KeyLoadInterval) {
			c.LoadIntervalS = p.loadS
		}
		return nil
	}
	return fmt.Errorf("planner.scaling_policy: unknown preset %q (one of %s)", name, strings.Join(PresetNames, ", "))
}

// MinIntervalS and MaxIntervalS bound both adjustment intervals, in
// seconds. Dynamo's planner reads its signals once per interval
// (Planner Design: "every adjustment_interval seconds, the planner
// queries Prometheus" for the interval's TTFT, ITL and traffic) with
// defaults of 180 s (throughput) and 5 s (load); a decision takes effect
// only after a worker's startup, seconds to minutes. An interval under a
// second models no real planner, and every tick costs a snapshot of every
// worker: the floor keeps a run to at most one tick per virtual second
// while work is in flight (a 1 ms interval made a 212 MB report).
// It also keeps every interval far above the loop's 1 ns resolution (an
// interval under 1 ns used to round to 0 and silently disable the
// planner). The ceiling (115 days) keeps tick times inside the clock.
const (
	MinIntervalS = 1
	MaxIntervalS = 1e7
)

// validInterval checks an enabled mode's interval; errors name the key.
func validInterval(key string, v float64) error {
	switch {
	case math.IsNaN(v) || v <= 0:
		return fmt.Errorf("planner.%s: must be > 0, got %v", key, v)
	case v < MinIntervalS || v > MaxIntervalS:
		return fmt.Errorf("planner.%s: must be in [%v, %v] seconds (the planner acts at most once a virtual second), got %v",
			key, float64(MinIntervalS), float64(MaxIntervalS), v)
	}
	return nil
}

// maxGPUs bounds max_num_gpus, far past any cluster, so GPU counts never
// overflow.
const maxGPUs = 1 << 20

// predictorNames are the load_predictor values.
var predictorNames = []string{"constant", "arima", "kalman", "prophet"}

// validate checks the fields the enabled modes use; errors name the YAML
// field.
func (c *Config) validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	if c.MaxGPUs < 1 || c.MaxGPUs > maxGPUs {
		bad("planner.max_num_gpus: must be within 1..%d, got %d", maxGPUs, c.MaxGPUs)
	}
	if !finite(c.TTFTMs) || c.TTFTMs < 0 {
		bad("planner: evaluation.sla.ttft_ms: must be a finite number ≥ 0, got %v", c.TTFTMs)
	}
	if !finite(c.ITLMs) || c.ITLMs < 0 {
		bad("planner: evaluation.sla.itl_ms: must be a finite number ≥ 0, got %v", c.ITLMs)
	}
	if c.Load {
		if err := validInterval(KeyLoadInterval, c.LoadIntervalS); err != nil {
			errs = append(errs, err)
		}
		if c.TTFTMs <= 0 && c.ITLMs <= 0 {
			bad("planner: load-based scaling needs evaluation.sla ttft_ms or itl_ms")
		}
		if c.ScaleDownTicks < 1 || c.ScaleDownTicks > 1<<20 {
			bad("planner.load_scaling_down_ticks: must be within 1..2^20, got %d", c.ScaleDownTicks)
		}
		if !finite(c.ScaleDownSensitivity) || c.ScaleDownSensitivity < 0 || c.ScaleDownSensitivity > 100 {
			bad("planner.load_scaling_down_sensitivity: must be within 0..100, got %v", c.ScaleDownSensitivity)
		}
		if c.MinObservations < 0 {
			bad("planner.load_min_observations: must be ≥ 0, got %d", c.MinObservations)
		}
		if c.MaxFPMSamples < 1 {
			bad("planner.max_num_fpm_samples: must be ≥ 1, got %d", c.MaxFPMSamples)
		}
		if !finite(c.ScaleDownCooldownS) || c.ScaleDownCooldownS < 0 || c.ScaleDownCooldownS > MaxIntervalS {
			bad("planner: scale-down cool-down: must be within 0..%v seconds, got %v", float64(MaxIntervalS), c.ScaleDownCooldownS)
		}
		if !finite(c.FPMHorizonS) || c.FPMHorizonS < 0 || c.FPMHorizonS > MaxIntervalS {
			bad("planner: FPM horizon: must be within 0..%v seconds, got %v", float64(MaxIntervalS), c.FPMHorizonS)
		}
		if r := isqrt(c.FPMBucketSize); c.FPMBucketSize < 1 || r*r != c.FPMBucketSize {
			bad("planner.fpm_sample_bucket_size: must be a perfect square ≥ 1, got %d", c.FPMBucketSize)
		}
	}
	if c.Throughput {
		if err := validInterval(KeyThroughputInterval, c.ThroughputIntervalS); err != nil {
			errs = append(errs, err)
		}
		if c.TTFTMs <= 0 || c.ITLMs <= 0 {
			bad("planner: throughput-based scaling needs evaluation.sla ttft_ms and itl_ms")
		}
		errs = append(errs, c.validatePredictor())
	}
	// Dynamo's rule: the fast reactive loop runs inside the slow one.
	if c.Load && c.Throughput && c.LoadIntervalS > 0 && c.LoadIntervalS >= c.ThroughputIntervalS {
		bad("planner.load_adjustment_interval_seconds: must be shorter than throughput_adjustment_interval_seconds (%v) when both scaling modes are on, got %v",
			c.ThroughputIntervalS, c.LoadIntervalS)
	}
	return errors.Join(errs...)
}

// validatePredictor checks load_predictor and its parameters.
func (c *Config) validatePredictor() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	nonneg := func(field string, v float64) {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			bad("planner.%s: must be a finite number ≥ 0, got %v", field, v)
		}
	}
	switch c.Predictor {
	case "constant", "arima":
	case "kalman":
		nonneg("kalman_q_level", c.KalmanQLevel)
		nonneg("kalman_q_trend", c.KalmanQTrend)
		nonneg("kalman_r", c.KalmanR)
		if c.KalmanMinPoints < 1 {
			bad("planner.kalman_min_points: must be ≥ 1, got %d", c.KalmanMinPoints)
		}
	case "prophet":
		if c.ProphetWindow < 0 || c.ProphetWindow == 1 {
			bad("planner.prophet_window_size: must be ≥ 2 (0: 50), got %d", c.ProphetWindow)
		}
	default:
		bad("planner.load_predictor: unknown predictor %q (one of %s)", c.Predictor, strings.Join(predictorNames, ", "))
	}
	return errors.Join(errs...)
}

// isqrt is ⌊√n⌋ for n ≥ 0 (0 for negative n).
func isqrt(n int) int {
	if n <= 0 {
		return 0
	}
	r := int(math.Sqrt(float64(n)))
	for r*r > n {
		r--
	}
	for (r+1)*(r+1) <= n {
		r++
	}
	return r
}
