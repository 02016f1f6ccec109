package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dynosim/dynosim-web/core/planner"
	"gopkg.in/yaml.v3"
)

// Planner is the scaling planner in the loop (spec §9.1–9.2; the
// policies are core/planner's). ScalingPolicy, when set, is a preset of
// which scalings run and their intervals: Parse fills in the preset's keys
// the config did not write, so an explicit key wins over the preset
// (planner.ApplyPresetExcept).
type Planner struct {
	Policy              string  `yaml:"policy" json:"policy"` // disabled | enabled
	ScalingPolicy       string  `yaml:"scaling_policy" json:"scaling_policy"`
	Target              string  `yaml:"target" json:"target"` // throughput | latency | sla | load (recorded; the SLA comes from evaluation.sla)
	EnableThroughput    bool    `yaml:"enable_throughput_scaling" json:"enable_throughput_scaling"`
	EnableLoad          bool    `yaml:"enable_load_scaling" json:"enable_load_scaling"`
	ThroughputIntervalS float64 `yaml:"throughput_adjustment_interval_seconds" json:"throughput_adjustment_interval_seconds"`
	LoadIntervalS       float64 `yaml:"load_adjustment_interval_seconds" json:"load_adjustment_interval_seconds"`
	MaxFPMSamples       int     `yaml:"max_num_fpm_samples" json:"max_num_fpm_samples"`
	FPMBucketSize       int     `yaml:"fpm_sample_bucket_size" json:"fpm_sample_bucket_size"`
	LoadDownSensitivity float64 `yaml:"load_scaling_down_sensitivity" json:"load_scaling_down_sensitivity"`
	LoadDownTicks       int     `yaml:"load_scaling_down_ticks" json:"load_scaling_down_ticks"` // ours: low estimates in a row before a scale-down
	LoadMinObservations int     `yaml:"load_min_observations" json:"load_min_observations"`
	LoadPredictor       string  `yaml:"load_predictor" json:"load_predictor"`
	LoadPredictorLog1p  bool    `yaml:"load_predictor_log1p" json:"load_predictor_log1p"`
	KalmanQLevel        float64 `yaml:"kalman_q_level" json:"kalman_q_level"`
	KalmanQTrend        float64 `yaml:"kalman_q_trend" json:"kalman_q_trend"`
	KalmanR             float64 `yaml:"kalman_r" json:"kalman_r"`
	KalmanMinPoints     int     `yaml:"kalman_min_points" json:"kalman_min_points"`
	MaxNumGPUs          int     `yaml:"max_num_gpus" json:"max_num_gpus"`
	MinWorkers          int     `yaml:"min_workers" json:"min_workers"`
	PrefillMinWorkers   int     `yaml:"prefill_min_workers" json:"prefill_min_workers"` // 0: min_workers
	DecodeMinWorkers    int     `yaml:"decode_min_workers" json:"decode_min_workers"`   // 0: min_workers
}

// DefaultPlanner is the planner section "{}" stands for: disabled, with
// core/planner's defaults.
func DefaultPlanner() Planner {
	d := planner.DefaultConfig()
	return Planner{Policy: "disabled", Target: "throughput", EnableThroughput: d.Throughput, EnableLoad: d.Load,
		ThroughputIntervalS: d.ThroughputIntervalS, LoadIntervalS: d.LoadIntervalS, MaxFPMSamples: d.MaxFPMSamples,
		FPMBucketSize: d.FPMBucketSize, LoadDownSensitivity: d.ScaleDownSensitivity, LoadDownTicks: d.ScaleDownTicks, LoadMinObservations: d.MinObservations,
		LoadPredictor: d.Predictor, LoadPredictorLog1p: d.PredictorLog1p, KalmanQLevel: d.KalmanQLevel, KalmanQTrend: d.KalmanQTrend,
		KalmanR: d.KalmanR, KalmanMinPoints: d.KalmanMinPoints, MaxNumGPUs: d.MaxGPUs, MinWorkers: 1}
}

// Resolve is the planner's configuration: the section (with its preset
// already folded in by Parse, see applyPreset) and the SLA it scales
// against.
func (p Planner) Resolve(sla SLA) (planner.Config, error) {
	c := planner.Config{Load: p.EnableLoad, Throughput: p.EnableThroughput, LoadIntervalS: p.LoadIntervalS,
		ThroughputIntervalS: p.ThroughputIntervalS, TTFTMs: sla.TTFTMs, ITLMs: sla.ITLMs,
		ScaleDownSensitivity: p.LoadDownSensitivity, ScaleDownTicks: p.LoadDownTicks, MinObservations: p.LoadMinObservations, MaxFPMSamples: p.MaxFPMSamples,
		FPMBucketSize: p.FPMBucketSize, Predictor: p.LoadPredictor, PredictorLog1p: p.LoadPredictorLog1p,
		KalmanQLevel: p.KalmanQLevel, KalmanQTrend: p.KalmanQTrend, KalmanR: p.KalmanR, KalmanMinPoints: p.KalmanMinPoints,
		MaxGPUs: p.MaxNumGPUs}
	return c, nil
}

// applyPreset folds scaling_policy into the section: the preset sets
// enable_load_scaling, enable_throughput_scaling and both intervals unless
// the YAML (or a --set) wrote them, which win (issue 29 item 11: the
// preset used to overwrite them silently, so the repo's own hostile
// configs ran at 180 s / 5 s while asking for 1 s). root is the config's
// YAML tree; an unknown preset is left to validate, which names it.
func (p *Planner) applyPreset(root *yaml.Node) {
	if p.ScalingPolicy == "" {
		return
	}
	c := planner.Config{Load: p.EnableLoad, Throughput: p.EnableThroughput, LoadIntervalS: p.LoadIntervalS, ThroughputIntervalS: p.ThroughputIntervalS}
	written := func(key string) bool { return plannerKeyWritten(root, key) }
	if planner.ApplyPresetExcept(p.ScalingPolicy, &c, written) != nil {
		return
	}
	p.EnableLoad, p.EnableThroughput, p.LoadIntervalS, p.ThroughputIntervalS = c.Load, c.Throughput, c.LoadIntervalS, c.ThroughputIntervalS
}

// plannerKeyWritten reports whether planner.<key> is in the YAML tree
// (the strict check refuses a null for these keys).
func plannerKeyWritten(root *yaml.Node, key string) bool {
	return keyNode(root, "planner."+key) != nil
}

// MinWorkersOf is the planner's floor for a pool (aggregated, prefill, decode).
func (p Planner) MinWorkersOf(pool string) int {
	switch {
	case pool == "prefill" && p.PrefillMinWorkers > 0:
		return p.PrefillMinWorkers
	case pool == "decode" && p.DecodeMinWorkers > 0:
		return p.DecodeMinWorkers
	}
	return p.MinWorkers
}

// validate checks the planner's numbers; the planner checks what depends
// on the rest of the config (the SLA, the GPUs) when it is built.
func (p *Planner) validate() error {
	if p.ScalingPolicy != "" && !slices.Contains(planner.PresetNames, p.ScalingPolicy) {
		return fmt.Errorf("planner.scaling_policy: must be one of %s, got %q", strings.Join(planner.PresetNames, ", "), p.ScalingPolicy)
	}
	// Both intervals are checked, enabled or not: a knob is either used or
	// refused, never silently ignored. The floor is the planner's
	// (planner.MinIntervalS: at most one tick a virtual second).
	for _, k := range []struct {
		key string
		v   float64
	}{
		{planner.KeyThroughputInterval, p.ThroughputIntervalS},
		{planner.KeyLoadInterval, p.LoadIntervalS},
	} {
		if !(k.v >= planner.MinIntervalS && k.v <= planner.MaxIntervalS) {
			return fmt.Errorf("planner.%s: must be in [%v, %v] seconds (the planner acts at most once a virtual second), got %v",
				k.key, float64(planner.MinIntervalS), float64(planner.MaxIntervalS), k.v)
		}
	}
	switch {
	case !(p.LoadDownSensitivity >= 0 && p.LoadDownSensitivity <= 100):
		return fmt.Errorf("planner.load_scaling_down_sensitivity: must be a percent in [0, 100], got %v", p.LoadDownSensitivity)
	case p.MaxFPMSamples < 1 || p.MaxFPMSamples > 1<<16:
		return fmt.Errorf("planner.max_num_fpm_samples: must be in [1, 65536], got %d", p.MaxFPMSamples)
	case p.FPMBucketSize < 1 || p.FPMBucketSize > p.MaxFPMSamples:
		return fmt.Errorf("planner.fpm_sample_bucket_size: must be in [1, max_num_fpm_samples], got %d", p.FPMBucketSize)
	case p.LoadMinObservations < 1 || p.LoadMinObservations > 1<<20:
		return fmt.Errorf("planner.load_min_observations: must be in [1, 2^20], got %d", p.LoadMinObservations)
	case p.MaxNumGPUs < 1 || p.MaxNumGPUs > MaxGPUs:
		return fmt.Errorf("planner.max_num_gpus: must be in [1, %d], got %d", MaxGPUs, p.MaxNumGPUs)
	case p.MinWorkers < 1 || p.MinWorkers > MaxReplicas || p.PrefillMinWorkers < 0 || p.PrefillMinWorkers > MaxReplicas || p.DecodeMinWorkers < 0 || p.DecodeMinWorkers > MaxReplicas:
		return fmt.Errorf("planner.min_workers: must be in [1, %d] (prefill_ and decode_min_workers: 0 for min_workers)", MaxReplicas)
	case !(p.KalmanQLevel >= 0) || !(p.KalmanQTrend >= 0) || !(p.KalmanR > 0) || p.KalmanQLevel > 1e12 || p.KalmanQTrend > 1e12 || p.KalmanR > 1e12:
		return fmt.Errorf("planner.kalman_q_level, kalman_q_trend: must be ≥ 0; kalman_r: > 0 (all ≤ 1e12)")
	case p.KalmanMinPoints < 1 || p.KalmanMinPoints > 1<<20:
		return fmt.Errorf("planner.kalman_min_points: must be in [1, 2^20], got %d", p.KalmanMinPoints)
	}
	return nil
}
