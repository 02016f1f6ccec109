package config

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/core/planner"
	"github.com/dynosim/dynosim-web/timing"
	"gopkg.in/yaml.v3"
)

// Issue 29 item 11: an interval under the planner's floor (1 s) is refused
// with an error naming the key and its line, whether the mode is on or off
// (1e-12 s used to round to a first tick at 0 and silently disable the
// planner; 1 ms ticked 20,000 times in a 20 s run). The floor itself and
// the ceiling are accepted.
func TestItem11PlannerIntervalBelowFloorRefused(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		sets []string
		err  string // "" accepted
	}{
		{"planner: {load_adjustment_interval_seconds: 0.001}", nil,
			"c.yaml:1: planner.load_adjustment_interval_seconds: must be in [1, 1e+07] seconds (the planner acts at most once a virtual second), got 0.001"},
		{"planner:\n  policy: enabled\n  throughput_adjustment_interval_seconds: 1e-12\n", nil,
			"c.yaml:3: planner.throughput_adjustment_interval_seconds: must be in [1, 1e+07] seconds"},
		{"planner: {enable_load_scaling: true, load_adjustment_interval_seconds: 0.999}", nil, "planner.load_adjustment_interval_seconds: must be in [1, 1e+07]"},
		{"planner: {load_adjustment_interval_seconds: .nan}", nil, "c.yaml:1: planner.load_adjustment_interval_seconds: must be a finite number"},
		{"planner: {throughput_adjustment_interval_seconds: .inf}", nil, "c.yaml:1: planner.throughput_adjustment_interval_seconds: must be a finite number"},
		{"planner: {throughput_adjustment_interval_seconds: 0}", nil, "planner.throughput_adjustment_interval_seconds: must be in"},
		{"planner: {throughput_adjustment_interval_seconds: -5}", nil, "planner.throughput_adjustment_interval_seconds: must be in"},
		{"planner: {throughput_adjustment_interval_seconds: 10000001}", nil, "planner.throughput_adjustment_interval_seconds: must be in"},
		{"", []string{"planner.load_adjustment_interval_seconds=0.5"}, "--set planner.load_adjustment_interval_seconds: must be in [1, 1e+07]"},
		{"planner: {load_adjustment_interval_seconds: 1, throughput_adjustment_interval_seconds: 1e7}", nil, ""},
		{"planner: {policy: enabled, scaling_policy: load_180_5, load_adjustment_interval_seconds: 1}", nil, ""},
	} {
		_, err := Parse("c.yaml", []byte(tc.yaml), tc.sets)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%q %v: %v", tc.yaml, tc.sets, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q %v: err %v, want %q", tc.yaml, tc.sets, err, tc.err)
		}
	}
}

// Issue 29 item 11: scaling_policy is a set of defaults for the four keys
// it names; a key the YAML or a --set writes wins over it (the preset used
// to overwrite explicit intervals silently, so the repo's own hostile
// configs ran at 180 s / 5 s while asking for 1 s).
func TestItem11PresetVsExplicit(t *testing.T) {
	type got struct {
		load, thr   bool
		loadS, thrS float64
	}
	for _, tc := range []struct {
		yaml string
		sets []string
		want got
	}{
		{"planner: {scaling_policy: load_180_10}", nil, got{true, false, 10, 180}},
		{"planner: {scaling_policy: hybrid_600_5}", nil, got{true, true, 5, 600}},
		{"planner: {scaling_policy: load_180_5, load_adjustment_interval_seconds: 1}", nil, got{true, false, 1, 180}},
		{"planner: {scaling_policy: hybrid_180_5, throughput_adjustment_interval_seconds: 10, load_adjustment_interval_seconds: 2}", nil, got{true, true, 2, 10}},
		{"planner: {scaling_policy: load_180_5, enable_throughput_scaling: true}", nil, got{true, true, 5, 180}},
		{"planner: {scaling_policy: throughput_600_5, enable_throughput_scaling: false}", nil, got{false, false, 5, 600}},
		{"planner: {scaling_policy: load_180_10}", []string{"planner.load_adjustment_interval_seconds=3"}, got{true, false, 3, 180}},
		{"planner: {load_adjustment_interval_seconds: 3}", []string{"planner.scaling_policy=hybrid_600_5"}, got{true, true, 3, 600}},
		{"planner: {scaling_policy: disabled, throughput_adjustment_interval_seconds: 30}", nil, got{false, false, 5, 30}},
		{"planner: {scaling_policy: disabled, enable_load_scaling: true}", nil, got{true, false, 5, 180}},
		{"planner: &p {scaling_policy: load_180_10, load_adjustment_interval_seconds: 4}", nil, got{true, false, 4, 180}},
		{"planner: {}", nil, got{false, true, 5, 180}}, // no preset: the defaults
	} {
		cfg, err := Parse("c.yaml", []byte(tc.yaml), tc.sets)
		if err != nil {
			t.Errorf("%q %v: %v", tc.yaml, tc.sets, err)
			continue
		}
		p := cfg.Planner
		if g := (got{p.EnableLoad, p.EnableThroughput, p.LoadIntervalS, p.ThroughputIntervalS}); g != tc.want {
			t.Errorf("%q %v: got %+v, want %+v", tc.yaml, tc.sets, g, tc.want)
		}
		// Resolve hands the planner exactly the section's values.
		c, err := p.Resolve(SLA{TTFTMs: 300, ITLMs: 30})
		if err != nil || c.Load != tc.want.load || c.Throughput != tc.want.thr || c.LoadIntervalS != tc.want.loadS || c.ThroughputIntervalS != tc.want.thrS {
			t.Errorf("%q %v: Resolve = %+v, %v", tc.yaml, tc.sets, c, err)
		}
	}
	// An explicit interval is checked against the preset's other one.
	cfg, err := Parse("c.yaml", []byte("planner: {policy: enabled, scaling_policy: hybrid_180_5, load_adjustment_interval_seconds: 200}"), nil)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := cfg.Planner.Resolve(SLA{TTFTMs: 300, ITLMs: 30})
	_, err = planner.New(c, []planner.Pool{{Name: "aggregated", GPUsPerWorker: 1, Model: timing.Polynomial{}}})
	if err == nil || !strings.Contains(err.Error(), "planner.load_adjustment_interval_seconds: must be shorter than throughput_adjustment_interval_seconds (180)") {
		t.Errorf("hybrid with a 200 s load interval: %v", err)
	}
}

// FuzzPlannerConfig parses arbitrary planner sections (a raw YAML value,
// or one built from a preset, the four preset keys and two intervals):
// Parse never panics; an accepted section has both intervals within the
// planner's bounds, every interval it wrote, and a planner that is either
// refused by New or ticks no sooner than the floor and only with a mode on.
func FuzzPlannerConfig(f *testing.F) {
	f.Add("{policy: enabled, scaling_policy: load_180_5, load_adjustment_interval_seconds: 1}", uint8(0), uint8(0), 0.0, 0.0)
	f.Add("{load_adjustment_interval_seconds: 1e-12}", uint8(0), uint8(0), 0.0, 0.0)
	f.Add("{scaling_policy: hybrid_180_5, load_adjustment_interval_seconds: null, max_num_gpus: 3}", uint8(0), uint8(0), 0.0, 0.0)
	f.Add("[1, 2]", uint8(0), uint8(0), 0.0, 0.0)
	f.Add("", uint8(3), uint8(0xff), 1.0, 0.001)
	f.Add("", uint8(6), uint8(0x0c), 600.0, 2.0)
	f.Add("", uint8(1), uint8(0x05), math.Inf(1), math.NaN())
	f.Fuzz(func(t *testing.T, section string, preset, mask uint8, thr, load float64) {
		if len(section) > 4096 {
			return
		}
		if section == "" {
			section = builtSection(preset, mask, thr, load)
		}
		text := "planner: " + section + "\nevaluation: {sla: {ttft_ms: 300, itl_ms: 30}}\n"
		cfg, err := Parse("c.yaml", []byte(text), nil)
		if err != nil {
			return
		}
		p := cfg.Planner
		for _, v := range []float64{p.LoadIntervalS, p.ThroughputIntervalS} {
			if !(v >= planner.MinIntervalS && v <= planner.MaxIntervalS) {
				t.Fatalf("%q: accepted an interval of %v s", text, v)
			}
		}
		// Every interval written wins over the preset.
		var doc struct {
			Planner map[string]any `yaml:"planner"`
		}
		if yaml.Unmarshal([]byte(text), &doc) == nil {
			for key, got := range map[string]float64{planner.KeyLoadInterval: p.LoadIntervalS, planner.KeyThroughputInterval: p.ThroughputIntervalS} {
				if v, ok := number(doc.Planner[key]); ok && v != got {
					t.Fatalf("%q: %s is %v, wrote %v", text, key, got, v)
				}
			}
		}
		c, err := p.Resolve(cfg.Evaluation.SLA)
		if err != nil {
			t.Fatalf("%q: Resolve: %v", text, err)
		}
		pl, err := planner.New(c, []planner.Pool{{Name: "aggregated", GPUsPerWorker: 1, Model: timing.Polynomial{}}})
		if err != nil {
			return
		}
		first := pl.FirstMs()
		switch {
		case !c.Load && !c.Throughput && !math.IsNaN(first):
			t.Fatalf("%q: no mode on, first tick at %v ms", text, first)
		case (c.Load || c.Throughput) && !(first >= planner.MinIntervalS*1000):
			t.Fatalf("%q: first tick at %v ms, under the %v s floor", text, first, planner.MinIntervalS)
		}
	})
}

// builtSection is a planner section from fuzz values: a preset (or none),
// the preset keys mask selects, and the two intervals as written.
func builtSection(preset, mask uint8, thr, load float64) string {
	var kv []string
	if i := int(preset) % (len(planner.PresetNames) + 1); i > 0 {
		kv = append(kv, "scaling_policy: "+planner.PresetNames[i-1])
	}
	if mask&1 != 0 {
		kv = append(kv, "enable_load_scaling: "+strconv.FormatBool(mask&16 != 0))
	}
	if mask&2 != 0 {
		kv = append(kv, "enable_throughput_scaling: "+strconv.FormatBool(mask&32 != 0))
	}
	if mask&4 != 0 {
		kv = append(kv, "load_adjustment_interval_seconds: "+yamlFloat(load))
	}
	if mask&8 != 0 {
		kv = append(kv, "throughput_adjustment_interval_seconds: "+yamlFloat(thr))
	}
	if mask&64 != 0 {
		kv = append(kv, "policy: enabled")
	}
	return "{" + strings.Join(kv, ", ") + "}"
}

// yamlFloat writes v as a YAML float (.nan, .inf, -.inf for the specials).
func yamlFloat(v float64) string {
	switch {
	case math.IsNaN(v):
		return ".nan"
	case math.IsInf(v, 1):
		return ".inf"
	case math.IsInf(v, -1):
		return "-.inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// number is v as a float64 when the YAML decoder gave a number.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}
