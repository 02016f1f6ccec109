package recommend

import (
	"fmt"
	"strings"
	"testing"
)

func TestParseSpace(t *testing.T) {
	sp, err := Parse("r.yaml", []byte(`
engine:
  workers:
    aggregated:
      parallelism: {replicas: {choices: [2, 4, 8]}, tensor: {range: {min: 1, max: 4, scale: log}}}
      kv_cache: {capacity: {choices: [{type: default}, {type: fixed, blocks: 4096}]}}
router: {policy: {choices: [round_robin, kv_router]}, temperature: {range: {min: 0, max: 1, step: 0.5}}}
optimization: {target: throughput_per_gpu}
optimizer: {max_trials: 20}
`), []string{"engine.workers.aggregated.scheduler.max_batched_tokens={choices: [4096, 8192]}"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range sp.Dims {
		got = append(got, d.Path+"="+strings.Join(d.Values, "|"))
	}
	want := []string{
		"engine.workers.aggregated.parallelism.replicas=2|4|8",
		"engine.workers.aggregated.parallelism.tensor=1|2|4",
		"engine.workers.aggregated.kv_cache.capacity={type: default}|{type: fixed, blocks: 4096}",
		"engine.workers.aggregated.scheduler.max_batched_tokens=4096|8192",
		"router.policy=round_robin|kv_router",
		"router.temperature=0|0.5|1",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("dims\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if sp.Size() != 3*3*2*2*2*3 || sp.Spec.Optimization.Target != "throughput_per_gpu" || sp.Spec.Optimizer.MaxTrials != 20 || sp.Spec.Optimizer.Seed != 42 {
		t.Fatalf("size %d spec %+v", sp.Size(), sp.Spec)
	}
	if strings.Contains(string(sp.Base), "optimiz") || strings.Contains(string(sp.Base), "choices") {
		t.Fatalf("base keeps the search: %s", sp.Base)
	}
	for i := range sp.Size() {
		if sp.Index(sp.At(i)) != i {
			t.Fatalf("At/Index disagree at %d", i)
		}
	}
	y, err := sp.YAML(sp.Sets(sp.At(sp.Size() - 1)))
	if err != nil || !strings.Contains(string(y), "replicas: 8") || !strings.Contains(string(y), "blocks: 4096") || !strings.Contains(string(y), "temperature: 1") {
		t.Fatalf("last candidate's YAML (%v):\n%s", err, y)
	}
}

func TestParseSpaceErrors(t *testing.T) {
	for _, tc := range []struct{ yaml, err string }{
		{"router: {temperature: {range: {min: 0, max: 1, step: 0.5, scale: log}}}", "r.yaml:1: router.temperature: range.step: a log range takes no step"},
		{"router: {temperature: {range: {min: 1, max: 0}}}", "range: max 0 is below min 1"},
		{"router: {temperature: {range: {min: 0, max: 1e9}}}", "range: more than 4096 values"},
		{"router: {policy: {choices: []}}", "choices: must be a non-empty list"},
		{"router: {temperature: {range: {min: 0, max: 1, by: 2}}}", "range.by: unknown key"},
		{"optimization: {target: speed}", "optimization.target: must be one of throughput"},
		{"optimization: {goal: speed}", "r.yaml:1: optimization: line 1: field goal not found"},
		{"optimization: {target: min_gpus}", "min_gpus needs constraints.min_goodput_rps"},
		{"optimizer: {algorithm: grid}", "optimizer.algorithm: must be one of bayesian, random, exhaustive"},
	} {
		if _, err := Parse("r.yaml", []byte(tc.yaml), nil); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: %v, want %q", tc.yaml, err, tc.err)
		}
	}
}

// An exhaustive search of a space past MaxExhaustive is refused before any
// trial (a product of domains grows fast).
func TestExhaustiveTooLarge(t *testing.T) {
	var dims []string
	for i := range 6 {
		dims = append(dims, fmt.Sprintf("k%d: {range: {min: 1, max: 10}}", i))
	}
	sp, err := Parse("r.yaml", []byte("x: {"+strings.Join(dims, ", ")+"}\noptimizer: {algorithm: exhaustive}"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Search(sp, nil, nil, 1, nil); err == nil || !strings.Contains(err.Error(), "exhaustive search of 1000000 candidates is more than 100000 trials") {
		t.Fatalf("%v", err)
	}
}
