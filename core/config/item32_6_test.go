package config

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/core/workload"
	"gopkg.in/yaml.v3"
)

// TestItem32_6TokensParse: input_tokens and output_tokens take an integer
// (as before), {mean, stddev} or {min, max}.
func TestItem32_6TokensParse(t *testing.T) {
	tests := []struct {
		name    string
		text    string
		sets    []string
		in, out Tokens
	}{
		{"default", "{}", nil, Tokens{N: 1024}, Tokens{N: 128}},
		{"scalar", "traffic: {source: {input_tokens: 300, output_tokens: 0}}", nil, Tokens{N: 300}, Tokens{N: 0}},
		{"normal", "traffic: {source: {input_tokens: {mean: 512, stddev: 64.5}}}", nil,
			Tokens{Dist: workload.Normal, Mean: 512, Stddev: 64.5}, Tokens{N: 128}},
		{"normal without stddev", "traffic: {source: {output_tokens: {mean: 200}}}", nil,
			Tokens{N: 1024}, Tokens{Dist: workload.Normal, Mean: 200}},
		{"uniform", "traffic: {source: {input_tokens: {min: 100, max: 100}, output_tokens: {min: 0, max: 9}}}", nil,
			Tokens{Dist: workload.Uniform, Min: 100, Max: 100}, Tokens{Dist: workload.Uniform, Min: 0, Max: 9}},
		{"alias", "x: &d {mean: 50, stddev: 5}\n", nil, Tokens{}, Tokens{}}, // refused below: x is unknown
		{"--set", "{}", []string{"traffic.source.input_tokens={min: 1, max: 8}"}, Tokens{Dist: workload.Uniform, Min: 1, Max: 8}, Tokens{N: 128}},
		{"--set over a mapping", "traffic: {source: {input_tokens: {min: 1, max: 8}}}", []string{"traffic.source.input_tokens=7"}, Tokens{N: 7}, Tokens{N: 128}},
	}
	for _, tc := range tests {
		cfg, err := Parse("c.yaml", []byte(tc.text), tc.sets)
		if tc.name == "alias" {
			if err == nil {
				t.Errorf("alias: accepted an unknown key")
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if cfg.Traffic.Source.InputTokens != tc.in || cfg.Traffic.Source.OutputTokens != tc.out {
			t.Errorf("%s: in %+v out %+v, want %+v %+v", tc.name, cfg.Traffic.Source.InputTokens, cfg.Traffic.Source.OutputTokens, tc.in, tc.out)
		}
	}
}

// TestItem32_6TokensErrors: every mistake names its key (and line).
func TestItem32_6TokensErrors(t *testing.T) {
	src := func(s string) string { return "traffic:\n  source:\n    " + s + "\n" }
	tests := []struct {
		name, text string
		sets       []string
		want       string
	}{
		{"negative stddev", src("input_tokens: {mean: 100, stddev: -1}"), nil, "c.yaml:3: traffic.source.input_tokens.stddev: must be ≥ 0, got -1"},
		{"mixed", src("input_tokens: {mean: 100, min: 1, max: 2}"), nil, "c.yaml:3: traffic.source.input_tokens: give {mean, stddev} (normal) or {min, max} (uniform), not both"},
		{"NaN mean", src("input_tokens: {mean: .nan, stddev: 1}"), nil, "traffic.source.input_tokens.mean: must be a finite number"},
		{"NaN stddev", src("output_tokens: {mean: 9, stddev: .NaN}"), nil, "traffic.source.output_tokens.stddev: must be a finite number"},
		{"inf stddev", src("output_tokens: {mean: 9, stddev: .inf}"), nil, "traffic.source.output_tokens.stddev: must be a finite number"},
		{"min > max", src("input_tokens: {min: 10, max: 9}"), nil, "c.yaml:3: traffic.source.input_tokens.max: must be ≥ min (10), got 9"},
		{"unknown key", src("input_tokens:\n      mean: 100\n      sigma: 3"), nil, "c.yaml:5: traffic.source.input_tokens.sigma: unknown key"},
		{"stddev alone", src("input_tokens: {stddev: 3}"), nil, "traffic.source.input_tokens.mean: required with stddev"},
		{"min alone", src("output_tokens: {min: 3}"), nil, "traffic.source.output_tokens.max: required with min"},
		{"empty mapping", src("output_tokens: {}"), nil, "traffic.source.output_tokens: must be an integer, {mean, stddev} or {min, max}"},
		{"float min", src("input_tokens: {min: 1.5, max: 9}"), nil, "c.yaml:3: traffic.source.input_tokens.min: must be an integer"},
		{"input min 0", src("input_tokens: {min: 0, max: 9}"), nil, "traffic.source.input_tokens.min: must be in [1, 16777216], got 0"},
		{"output min -1", src("output_tokens: {min: -1, max: 9}"), nil, "traffic.source.output_tokens.min: must be in [0, 16777216], got -1"},
		{"mean 0", src("input_tokens: {mean: 0.5}"), nil, "traffic.source.input_tokens.mean: must be in [1, 16777216], got 0.5"},
		{"max too big", src("input_tokens: {min: 1, max: 16777217}"), nil, "traffic.source.input_tokens.max: must be ≤ 16777216"},
		{"list", src("input_tokens: [1, 2]"), nil, "traffic.source.input_tokens: must be a integer value"},
		{"string", src("input_tokens: lots"), nil, "traffic.source.input_tokens: must be an integer, got \"lots\""},
		{"domain", src("input_tokens: {choices: [1, 2]}"), nil, "is for `dynosim recommend`"},
		{"domain in mean", src("input_tokens: {mean: {choices: [1, 2]}}"), nil, "traffic.source.input_tokens.mean: a search domain"},
		{"scalar still checked", src("input_tokens: 0"), nil, "traffic.source.input_tokens: must be ≥ 1, got 0"},
		{"--set", "{}", []string{"traffic.source.output_tokens={mean: 5, stddev: -2}"}, "--set traffic.source.output_tokens.stddev: must be ≥ 0"},
		{"--set unknown", "{}", []string{"traffic.source.output_tokens={avg: 5}"}, "--set traffic.source.output_tokens.avg: unknown key"},
	}
	for _, tc := range tests {
		_, err := Parse("c.yaml", []byte(tc.text), tc.sets)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestItem32_6TokensRoundTrip: the YAML and JSON forms read back to the
// same value.
func TestItem32_6TokensRoundTrip(t *testing.T) {
	for _, tok := range []Tokens{{N: 1024}, {N: 0}, {Dist: workload.Normal, Mean: 300.5, Stddev: 0}, {Dist: workload.Normal, Mean: 1, Stddev: 1e3}, {Dist: workload.Uniform, Min: 0, Max: 16}} {
		src := Source{InputTokens: tok, OutputTokens: tok}
		j, err := json.Marshal(src)
		if err != nil {
			t.Fatal(err)
		}
		var back Source
		if err := json.Unmarshal(j, &back); err != nil || back.InputTokens != tok || back.OutputTokens != tok {
			t.Errorf("JSON %s: back %+v, err %v; want %+v", j, back.InputTokens, err, tok)
		}
		y, err := yaml.Marshal(src)
		if err != nil {
			t.Fatal(err)
		}
		back = Source{}
		if err := yaml.Unmarshal(y, &back); err != nil || back.InputTokens != tok {
			t.Errorf("YAML %s: back %+v, err %v; want %+v", y, back.InputTokens, err, tok)
		}
	}
	for _, bad := range []string{`{"input_tokens": {"mean": 1, "max": 2}}`, `{"input_tokens": {"x": 1}}`, `{"input_tokens": 1.5}`, `{"input_tokens": "a"}`} {
		var s Source
		if err := json.Unmarshal([]byte(bad), &s); err == nil {
			t.Errorf("JSON %s: accepted", bad)
		}
	}
}

// FuzzItem32_6Tokens: any input_tokens value is accepted with valid
// parameters or refused with a one-line error naming the key.
func FuzzItem32_6Tokens(f *testing.F) {
	for _, s := range []string{"1024", "{mean: 512, stddev: 64}", "{min: 1, max: 9}", "{mean: .nan}", "{min: 9, max: 1}", "{mean: 1, min: 1}", "{}", "[1]", "{mean: {range: {min: 1, max: 2}}}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		cfg, err := Parse("f.yaml", []byte("traffic:\n  source:\n    input_tokens: "+v+"\n"), nil)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		if err := cfg.Traffic.Source.InputTokens.Length().Check("k", 1); err != nil {
			t.Fatalf("accepted %q: %v", v, err)
		}
		j, _ := json.Marshal(cfg.Traffic.Source.InputTokens)
		var back Tokens
		if err := json.Unmarshal(j, &back); err != nil || back != cfg.Traffic.Source.InputTokens {
			t.Fatalf("%q: JSON %s reads back %+v, %v", v, j, back, err)
		}
	})
}
