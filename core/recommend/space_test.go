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

// Issue 29 item 13: a range at a magnitude where its step no longer moves
// a float64 (1e20 + 1 == 1e20) looped past the 4,096-value cap until
// memory ran out. Values are now counted by index: such a range either
// has one value or is refused naming range.step; integer values past 2^53
// − 1 (where float64 starts skipping integers) are refused naming the key.
func TestItem13RangeHugeMagnitudeTerminates(t *testing.T) {
	for _, tc := range []struct {
		name, rng string
		want      []string // values, when it parses
		err       string
	}{
		{"min = max at 1e20", "{min: 1e20, max: 1e20}", []string{"1e+20"}, ""},
		{"step below the spacing", "{min: 1e20, max: 1.0000000000000002e20, step: 10}", nil, "r.yaml:1: x: range.step: 10 does not advance at magnitude 1.0000000000000002e+20"},
		{"default step at 1e17", "{min: 1e17, max: 1.00000000000001e17}", nil, "range.step: 1 does not advance"},
		{"step equal to the spacing", "{min: 1e20, max: 1.0000000000000003e20, step: 16384}", []string{"1e+20", "1.0000000000000002e+20", "1.0000000000000003e+20"}, ""},
		{"whole float range", "{min: -1.7e308, max: 1.7e308}", nil, "range: more than 4096 values"},
		{"whole float range by a huge step", "{min: -1.7e308, max: 1.7e308, step: 1e308}", nil, "range: more than 4096 values"},
		{"log to the float maximum", "{min: 5e-324, max: 1.7976931348623157e308, scale: log}", nil, ""},
		{"integer past 2^53", "{min: 9007199254740993, max: 9007199254740993}", nil, "range.min: an integer range needs values within ±(2^53 − 1)"},
		{"integer max near int64", "{min: 1, max: 9223372036854775807}", nil, "range.max: an integer range needs values within ±(2^53 − 1)"},
		{"integer step past 2^53", "{min: 0, max: 1, step: 18014398509481984}", nil, "range.step: an integer range needs values within ±(2^53 − 1)"},
		{"negative integers keep max", "{min: -3, max: -1}", []string{"-3", "-2", "-1"}, ""},
		{"a step landing on max up to rounding", "{min: 0, max: 0.3, step: 0.1}", []string{"0", "0.1", "0.2", "0.3"}, ""},
		{"exactly the cap", "{min: 1, max: 4096}", nil, ""},
		{"one past the cap", "{min: 0, max: 4096}", nil, "range: more than 4096 values"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sp, err := Parse("r.yaml", []byte("x: {range: "+tc.rng+"}"), nil)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			vals := sp.Dims[0].Values
			if len(vals) > MaxChoices {
				t.Fatalf("%d values, more than %d", len(vals), MaxChoices)
			}
			if tc.want != nil && strings.Join(vals, "|") != strings.Join(tc.want, "|") {
				t.Fatalf("values %v, want %v", vals, tc.want)
			}
		})
	}
}
