package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/core/report/schema"
)

const (
	aiperfRun  = "../../core/measured/testdata/aiperf-run1"
	vllmResult = "../../core/measured/testdata/vllm-synthetic/vllm-4.0qps-Llama-3.1-8B-Instruct-detailed.json"
	vllmReal   = "../../core/measured/testdata/vllm-llm-d/benchmark_2025-05-13_04-55-27.json" // real, summary only
)

// A real run → convert-trace → predict with that trace → compare prints a
// row per common metric with a finite error, and the replayed workload
// matches the measured one.
func TestConvertPredictCompare(t *testing.T) {
	for _, tc := range []struct {
		name    string
		real    []string
		rows    int  // at least
		summary bool // a summary-only result: no E2E or length statistics to compare
	}{
		{"aiperf directory", []string{aiperfRun}, 40, false},
		{"aiperf files", []string{filepath.Join(aiperfRun, "profile_export.jsonl"), filepath.Join(aiperfRun, "profile_export_aiperf.json")}, 40, false},
		{"vllm", []string{vllmResult}, 20, false},
		{"real vllm summary", []string{vllmReal}, 20, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			trace := filepath.Join(dir, "trace.jsonl")
			var stdout, stderr bytes.Buffer
			if err := run(append([]string{"convert-trace", "-o", trace}, tc.real...), &stdout, &stderr); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(stderr.String(), "wrote "+trace) {
				t.Errorf("stderr %q", stderr.String())
			}
			out := filepath.Join(dir, "out")
			if err := run([]string{"predict", "--trace", trace, "--output-dir", out, "--set", "engine.workers.aggregated.parallelism.replicas=2"}, &stdout, &stderr); err != nil {
				t.Fatal(err)
			}
			stdout.Reset()
			if err := run(append(append([]string{"compare"}, tc.real...), filepath.Join(out, "prediction.json")), &stdout, &stderr); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
			if len(lines) < tc.rows+1 || !strings.HasPrefix(lines[0], "metric") {
				t.Fatalf("%d lines:\n%s", len(lines), stdout.String())
			}
			got := map[string]float64{}
			for _, l := range lines[1:] {
				f := strings.Fields(l)
				e, err := strconv.ParseFloat(strings.TrimSuffix(f[len(f)-1], "%"), 64)
				if len(f) != 4 || err != nil || math.IsNaN(e) || math.IsInf(e, 0) {
					t.Fatalf("row %q", l)
				}
				got[f[0]] = e
			}
			want := []string{schema.TTFT.Key(schema.Mean), schema.ITL.Key(schema.P99), schema.TPOT.Key(schema.Mean), schema.RequestThroughputRPS, schema.OutputThroughputTokS}
			same := []string{schema.CompletedRequests, schema.TotalInputTokens, schema.TotalOutputTokens}
			if !tc.summary {
				want, same = append(want, schema.E2E.Key(schema.Mean)), append(same, schema.InputLen.Key(schema.Mean))
			}
			for _, k := range want {
				if _, ok := got[k]; !ok {
					t.Errorf("no %s row", k)
				}
			}
			// The trace replays the measured requests: same count and tokens.
			for _, k := range same {
				if e, ok := got[k]; !ok || e != 0 {
					t.Errorf("%s: error %v%% (present %v), want 0", k, e, ok)
				}
			}

			stdout.Reset()
			if err := run(append(append([]string{"compare", "-format", "json"}, tc.real...), filepath.Join(out, "prediction.json")), &stdout, &stderr); err != nil {
				t.Fatal(err)
			}
			var rows []struct {
				Key                        string
				Measured, Predicted, Error float64
			}
			if err := json.Unmarshal(stdout.Bytes(), &rows); err != nil || len(rows) != len(lines)-1 || rows[0].Key != schema.TTFT.Key(schema.Mean) {
				t.Fatalf("json rows (%v): %s", err, stdout.String())
			}
		})
	}
}

func TestConvertTraceToStdout(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if err := run([]string{"convert-trace", filepath.Join(aiperfRun, "profile_export.jsonl")}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) != 89 || lines[0] != `{"timestamp":0,"input_length":550,"output_length":247,"hash_ids":[0,1]}` {
		t.Fatalf("%d lines, first %q", len(lines), lines[0])
	}
}

// A vLLM result without start_times: convert-trace says how it placed
// the arrivals.
func TestConvertTraceNotesArrivals(t *testing.T) {
	data, err := os.ReadFile(vllmResult)
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	delete(raw, "start_times")
	raw["request_rate"], raw["max_concurrency"] = json.RawMessage(`"inf"`), json.RawMessage(`4`)
	old, _ := json.Marshal(raw)
	p := write(t, t.TempDir(), "old.json", string(old))
	var stdout, stderr bytes.Buffer
	if err := run([]string{"convert-trace", p}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr.String(), "--set traffic.load.type=concurrency --set traffic.load.concurrency=4") {
		t.Fatalf("stderr %q", stderr.String())
	}
}

func TestCompareErrors(t *testing.T) {
	dir := t.TempDir()
	pred := write(t, dir, "prediction.json", `{"summary": {"mean_ttft_ms": 1}}`)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"too few arguments", []string{"compare", pred}, "dynosim: compare: want REAL [REAL2] PREDICTION.json, got 1 arguments"},
		{"too many arguments", []string{"compare", pred, pred, pred, pred}, "dynosim: compare: want REAL [REAL2] PREDICTION.json, got 4 arguments"},
		{"bad format", []string{"compare", "-format", "xml", aiperfRun, pred}, `dynosim: compare: -format: must be table or json, got "xml"`},
		{"unknown flag", []string{"compare", "--bogus", aiperfRun, pred}, "dynosim: compare: flag provided but not defined: -bogus"},
		{"empty directory", []string{"compare", dir + "/", pred}, "dynosim: " + dir + "/: no profile_export_aiperf.json or profile_export.jsonl"},
		{"missing file", []string{"compare", filepath.Join(dir, "none.json"), pred}, "dynosim: " + filepath.Join(dir, "none.json") + ": no such file"},
		{"not a prediction", []string{"compare", aiperfRun, filepath.Join(aiperfRun, "profile_export_aiperf.json")}, "dynosim: " + filepath.Join(aiperfRun, "profile_export_aiperf.json") + ": prediction: no summary object"},
		{"the prediction as the run", []string{"compare", pred, pred}, "dynosim: " + pred + ": not an AIPerf or vllm bench serve export"},
		{"convert-trace without records", []string{"convert-trace", filepath.Join(aiperfRun, "profile_export_aiperf.json")}, "dynosim: " + filepath.Join(aiperfRun, "profile_export_aiperf.json") + ": no per-request records: the trace needs AIPerf's profile_export.jsonl"},
		{"convert-trace without input", []string{"convert-trace", "-o", filepath.Join(dir, "t.jsonl")}, "dynosim: convert-trace: want one measured run"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := runMain(t, tc.args...)
			if code != 2 {
				t.Fatalf("exit %d, stderr %q", code, stderr)
			}
			if first, _, _ := strings.Cut(stderr, "\n"); !strings.HasPrefix(first, tc.want) {
				t.Fatalf("stderr %q, want prefix %q", stderr, tc.want)
			}
			if stdout != "" {
				t.Fatalf("stdout %q", stdout)
			}
		})
	}
}
