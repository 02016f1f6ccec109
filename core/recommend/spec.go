package recommend

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// Spec is a search's own sections (AISimulate's names).
type Spec struct {
	Optimization Optimization `yaml:"optimization" json:"optimization"`
	Optimizer    Optimizer    `yaml:"optimizer" json:"optimizer"`
}

// Optimization is what is optimized and under which constraints.
type Optimization struct {
	// Target: throughput | throughput_per_gpu | throughput_per_user |
	// goodput | goodput_per_gpu | ttft | e2e_latency | min_gpus | pareto |
	// max_rate.
	Target    string      `yaml:"target" json:"target"`
	StrictSLA bool        `yaml:"strict_sla" json:"strict_sla"` // a mean above a bound also fails
	TopN      int         `yaml:"top_n" json:"top_n"`           // the ledger's top_n view
	MaxRate   MaxRate     `yaml:"max_rate" json:"max_rate"`
	Limits    Constraints `yaml:"constraints" json:"constraints"`
}

// Constraints bound the static candidates.
type Constraints struct {
	MinCandidateGPUs int     `yaml:"min_candidate_gpus" json:"min_candidate_gpus"`
	MaxCandidateGPUs int     `yaml:"max_candidate_gpus" json:"max_candidate_gpus"`
	MinGoodputRPS    float64 `yaml:"min_goodput_rps" json:"min_goodput_rps"`
}

// MaxRate configures the max_rate target's search over the arrival rate:
// traffic.load.speedup for a trace, requests_per_second for Poisson or
// constant-rate synthetic traffic, bracketed from Start (doubling or
// halving) and bisected until the bracket is within Tolerance (relative).
type MaxRate struct {
	Start     float64 `yaml:"start" json:"start"`
	Tolerance float64 `yaml:"tolerance" json:"tolerance"`
	MaxRuns   int     `yaml:"max_runs" json:"max_runs"` // runs per candidate
}

// Optimizer is how candidates are chosen.
type Optimizer struct {
	Algorithm string `yaml:"algorithm" json:"algorithm"` // bayesian (TPE) | random | exhaustive
	MaxTrials int    `yaml:"max_trials" json:"max_trials"`
	Seed      uint64 `yaml:"seed" json:"seed"`
}

// DefaultSpec is AISimulate's defaults (optimizer.parallelism is the CLI's
// --parallel here).
func DefaultSpec() Spec {
	return Spec{
		Optimization: Optimization{Target: "throughput", TopN: 10, Limits: Constraints{MaxCandidateGPUs: 32},
			MaxRate: MaxRate{Start: 1, Tolerance: 0.05, MaxRuns: 16}},
		Optimizer: Optimizer{Algorithm: "bayesian", MaxTrials: 320, Seed: 42},
	}
}

// Targets are the optimization targets.
var Targets = []string{"throughput", "throughput_per_gpu", "throughput_per_user", "goodput", "goodput_per_gpu",
	"ttft", "e2e_latency", "min_gpus", "pareto", "max_rate"}

// decode reads one section over the defaults; unknown keys are errors.
func (s *Spec) decode(name, key string, n *yaml.Node) error {
	b, err := yaml.Marshal(n)
	if err != nil {
		return err
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var dst any = &s.Optimization
	if key == "optimizer" {
		dst = &s.Optimizer
	}
	if err := dec.Decode(dst); err != nil {
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		msg = strings.TrimPrefix(msg, "unmarshal errors:\n  ")
		return fmt.Errorf("%s:%d: %s: %s", name, n.Line, key, msg)
	}
	return nil
}

func (s *Spec) validate(name string) error {
	o, z := &s.Optimization, &s.Optimizer
	switch {
	case !slices.Contains(Targets, o.Target):
		return fmt.Errorf("%s: optimization.target: must be one of %s, got %q", name, strings.Join(Targets, ", "), o.Target)
	case o.Limits.MinCandidateGPUs < 0 || o.Limits.MaxCandidateGPUs < 1 || o.Limits.MinCandidateGPUs > o.Limits.MaxCandidateGPUs:
		return fmt.Errorf("%s: optimization.constraints: need 0 ≤ min_candidate_gpus ≤ max_candidate_gpus, max ≥ 1", name)
	case o.Limits.MinGoodputRPS < 0:
		return fmt.Errorf("%s: optimization.constraints.min_goodput_rps: must be ≥ 0", name)
	case o.Target == "min_gpus" && o.Limits.MinGoodputRPS == 0:
		return fmt.Errorf("%s: optimization.target: min_gpus needs constraints.min_goodput_rps", name)
	case o.TopN < 1:
		return fmt.Errorf("%s: optimization.top_n: must be ≥ 1", name)
	case !(o.MaxRate.Start > 0) || !(o.MaxRate.Tolerance > 0 && o.MaxRate.Tolerance < 1) || o.MaxRate.MaxRuns < 3:
		return fmt.Errorf("%s: optimization.max_rate: need start > 0, 0 < tolerance < 1, max_runs ≥ 3", name)
	case !slices.Contains([]string{"bayesian", "random", "exhaustive"}, z.Algorithm):
		return fmt.Errorf("%s: optimizer.algorithm: must be one of bayesian, random, exhaustive, got %q", name, z.Algorithm)
	case z.MaxTrials < 1 || z.MaxTrials > 100_000:
		return fmt.Errorf("%s: optimizer.max_trials: must be in [1, 100000], got %d", name, z.MaxTrials)
	}
	return nil
}
