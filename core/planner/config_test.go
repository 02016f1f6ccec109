package planner

import (
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/timing"
)

func TestApplyPreset(t *testing.T) {
	for _, tc := range []struct {
		name             string
		load, throughput bool
		thrS, loadS      float64
	}{
		{"disabled", false, false, 180, 5}, // intervals untouched
		{"throughput_180_5", false, true, 180, 5},
		{"throughput_600_5", false, true, 600, 5},
		{"load_180_5", true, false, 180, 5},
		{"load_180_10", true, false, 180, 10},
		{"hybrid_180_5", true, true, 180, 5},
		{"hybrid_600_5", true, true, 600, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			if err := ApplyPreset(tc.name, &c); err != nil {
				t.Fatal(err)
			}
			if c.Load != tc.load || c.Throughput != tc.throughput || c.ThroughputIntervalS != tc.thrS || c.LoadIntervalS != tc.loadS {
				t.Errorf("got load %v throughput %v %v s / %v s, want %v %v %v s / %v s",
					c.Load, c.Throughput, c.ThroughputIntervalS, c.LoadIntervalS, tc.load, tc.throughput, tc.thrS, tc.loadS)
			}
		})
	}
	if len(PresetNames) != 7 {
		t.Errorf("PresetNames = %v", PresetNames)
	}
	c := DefaultConfig()
	err := ApplyPreset("hybrid_1_1", &c)
	if err == nil {
		t.Fatal("unknown preset accepted")
	}
	for _, n := range PresetNames {
		if !strings.Contains(err.Error(), n) {
			t.Errorf("error %q does not list %s", err, n)
		}
	}
}

func TestDefaultConfig(t *testing.T) {
	c := DefaultConfig()
	if !c.Throughput || c.Load || c.ThroughputIntervalS != 180 || c.LoadIntervalS != 5 || c.ScaleDownSensitivity != 80 ||
		c.MinObservations != 5 || c.MaxFPMSamples != 64 || c.FPMBucketSize != 16 || c.Predictor != "arima" ||
		c.KalmanQLevel != 1 || c.KalmanQTrend != 0.1 || c.KalmanR != 10 || c.KalmanMinPoints != 5 || c.MaxGPUs != 8 {
		t.Errorf("DefaultConfig() = %+v", c)
	}
}

// slaConfig is the default config with an SLA of 500 ms TTFT, 50 ms ITL.
func slaConfig() Config {
	c := DefaultConfig()
	c.TTFTMs, c.ITLMs = 500, 50
	return c
}

func TestNewErrors(t *testing.T) {
	fixed := timing.Fixed{Prefill: 100, Decode: 10}
	agg := []Pool{{Name: "aggregated", GPUsPerWorker: 1, MinWorkers: 1, Model: fixed}}
	for _, tc := range []struct {
		name  string
		cfg   func(*Config)
		pools []Pool
		want  string
	}{
		{"throughput without SLA", func(c *Config) { c.TTFTMs, c.ITLMs = 0, 0 }, agg,
			"planner: throughput-based scaling needs evaluation.sla ttft_ms and itl_ms"},
		{"throughput without ITL", func(c *Config) { c.ITLMs = 0 }, agg, "needs evaluation.sla ttft_ms and itl_ms"},
		{"load without SLA", func(c *Config) { c.Throughput, c.Load, c.TTFTMs, c.ITLMs = false, true, 0, 0 }, agg,
			"load-based scaling needs evaluation.sla ttft_ms or itl_ms"},
		{"minimums over the budget", func(c *Config) { c.MaxGPUs = 6 },
			[]Pool{{Name: "prefill", GPUsPerWorker: 2, MinWorkers: 2, Model: fixed}, {Name: "decode", GPUsPerWorker: 2, MinWorkers: 2, Model: fixed}},
			"planner.max_num_gpus: 6 GPUs cannot hold the pools' minimum workers (prefill 2 × 2 + decode 2 × 2 = 8 GPUs)"},
		{"worker wider than the budget", func(c *Config) { c.MaxGPUs = 4 },
			[]Pool{{Name: "aggregated", GPUsPerWorker: 8, Model: fixed}}, "planner.max_num_gpus"},
		{"no GPUs", func(c *Config) { c.MaxGPUs = 0 }, agg, "planner.max_num_gpus: must be within"},
		{"throughput interval", func(c *Config) { c.ThroughputIntervalS = 0 }, agg, "planner.throughput_adjustment_interval_seconds: must be > 0"},
		{"load interval", func(c *Config) { c.Load, c.LoadIntervalS = true, -5 }, agg, "planner.load_adjustment_interval_seconds: must be > 0"},
		{"load interval not shorter", func(c *Config) { c.Load, c.LoadIntervalS = true, 180 }, agg,
			"planner.load_adjustment_interval_seconds: must be shorter than throughput_adjustment_interval_seconds"},
		{"predictor", func(c *Config) { c.Predictor = "oracle" }, agg, `planner.load_predictor: unknown predictor "oracle" (one of constant, arima, kalman, prophet)`},
		{"kalman r", func(c *Config) { c.Predictor, c.KalmanR = "kalman", -1 }, agg, "planner.kalman_r"},
		{"bucket size", func(c *Config) { c.Load, c.FPMBucketSize = true, 12 }, agg, "planner.fpm_sample_bucket_size: must be a perfect square"},
		{"sensitivity", func(c *Config) { c.Load, c.ScaleDownSensitivity = true, 120 }, agg, "planner.load_scaling_down_sensitivity"},
		{"samples", func(c *Config) { c.Load, c.MaxFPMSamples = true, 0 }, agg, "planner.max_num_fpm_samples"},
		{"negative SLA", func(c *Config) { c.TTFTMs = -1 }, agg, "evaluation.sla.ttft_ms"},
		{"no pools", func(*Config) {}, nil, "planner: no pools to scale"},
		{"pool name", func(*Config) {}, []Pool{{Name: "encode", GPUsPerWorker: 1, Model: fixed}}, `planner: pool "encode"`},
		{"pool GPUs", func(*Config) {}, []Pool{{Name: "aggregated", Model: fixed}}, "GPUs per worker must be ≥ 1"},
		{"pool minimum", func(*Config) {}, []Pool{{Name: "decode", GPUsPerWorker: 1, MinWorkers: -1, Model: fixed}}, "planner.decode_min_workers: must be ≥ 0"},
		{"no model", func(*Config) {}, []Pool{{Name: "prefill", GPUsPerWorker: 1}}, "planner: pool prefill: throughput-based scaling needs the pool's timing model"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := slaConfig()
			tc.cfg(&c)
			_, err := New(c, tc.pools)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestNewAccepts(t *testing.T) {
	for _, name := range PresetNames {
		c := slaConfig()
		if err := ApplyPreset(name, &c); err != nil {
			t.Fatal(err)
		}
		pools := []Pool{{Name: "prefill", GPUsPerWorker: 2, Model: timing.Polynomial{}}, {Name: "decode", GPUsPerWorker: 2, Model: timing.Polynomial{}}}
		if _, err := New(c, pools); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	// Load-based scaling alone needs no timing model and one SLA bound.
	c := DefaultConfig()
	c.Throughput, c.Load, c.ITLMs = false, true, 40
	if _, err := New(c, []Pool{{Name: "decode", GPUsPerWorker: 1}}); err != nil {
		t.Error(err)
	}
}
