package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/core/report/schema"
)

// A recommend config beside a relative trace (the embedded sample's first
// 120 requests): 12 candidates, two over the GPU budget.
func recConfig(t *testing.T, dir, extra string) string {
	t.Helper()
	lines := strings.SplitAfter(string(sampleTrace), "\n")
	write(t, dir, "t.jsonl", strings.Join(lines[:120], ""))
	return write(t, dir, "rec.yaml", `
traffic: {source: {type: trace, paths: [t.jsonl]}, load: {speedup: 3}}
engine:
  workers:
    aggregated: {parallelism: {replicas: {choices: [1, 2, 4]}, tensor: {choices: [1, 2]}}, timing: {type: polynomial}}
router: {policy: {choices: [round_robin, kv_router]}}
evaluation: {sla: {ttft_ms: 2000, itl_ms: 50}}
optimization:
  target: throughput_per_gpu
  constraints: {max_candidate_gpus: 4}
`+extra)
}

// recommend writes the ledger, its CSV and one predict config per
// recommendation; each reproduces its ledger metrics through predict, from
// another directory; --parallel does not change a byte.
func TestRecommendOutputs(t *testing.T) {
	dir := t.TempDir()
	cfg := recConfig(t, dir, "")
	var ledgers [][]byte
	for _, par := range []string{"1", "2"} {
		out := filepath.Join(dir, "out"+par)
		var stdout, stderr bytes.Buffer
		if err := run([]string{"recommend", "-c", cfg, "--output-dir", out, "--parallel", par, "--format", "json", "--quiet"}, &stdout, &stderr); err != nil {
			t.Fatal(err, stderr.String())
		}
		var rows []struct {
			Rank       int    `json:"rank"`
			ID         string `json:"candidate_id"`
			ConfigPath string `json:"config_path"`
		}
		if err := json.Unmarshal(stdout.Bytes(), &rows); err != nil || len(rows) != 10 || rows[0].Rank != 1 || rows[0].ConfigPath == "" {
			t.Fatalf("rows %+v (%v)", rows, err)
		}
		js, err := os.ReadFile(filepath.Join(out, "recommendation.json"))
		if err != nil {
			t.Fatal(err)
		}
		ledgers = append(ledgers, js)
		var l struct {
			Counts     struct{ Evaluated, Feasible, Infeasible int }
			Candidates []struct {
				ID      string             `json:"candidate_id"`
				Metrics map[string]float64 `json:"metrics"`
			}
		}
		if err := json.Unmarshal(js, &l); err != nil || l.Counts.Evaluated != 12 || l.Counts.Infeasible != 2 {
			t.Fatalf("counts %+v (%v)", l.Counts, err)
		}
		csv, _ := os.ReadFile(filepath.Join(out, "recommendation.csv"))
		if n := strings.Count(string(csv), "\n"); n != 13 || !strings.Contains(string(csv), "is_top_n") {
			t.Fatalf("csv: %d lines", n)
		}
		// Every recommendation, run by predict from elsewhere, gives its
		// ledger metrics.
		t.Chdir(t.TempDir())
		for _, r := range rows {
			stdout.Reset()
			if err := run([]string{"predict", "-c", r.ConfigPath, "--format", "json"}, &stdout, &stderr); err != nil {
				t.Fatal(err)
			}
			var rep struct{ Summary map[string]float64 }
			json.Unmarshal(stdout.Bytes(), &rep)
			for _, c := range l.Candidates {
				if c.ID != r.ID {
					continue
				}
				for _, k := range []string{schema.OutputThroughputTokS, schema.TTFT.Key(schema.Mean), schema.ITL.Key(schema.P99), schema.GoodputRequestThroughputRPS, schema.DurationMs, schema.GPUHours} {
					if rep.Summary[k] != c.Metrics[k] {
						t.Fatalf("%s %s: predict %v, ledger %v", r.ConfigPath, k, rep.Summary[k], c.Metrics[k])
					}
				}
			}
		}
	}
	if !bytes.Equal(ledgers[0], ledgers[1]) {
		t.Fatal("the ledger differs between --parallel 1 and 2")
	}
}

// Nothing feasible exits 1 after writing the ledger; usage errors exit 2.
func TestRecommendExits(t *testing.T) {
	dir := t.TempDir()
	recConfig(t, dir, "")
	// An SLA no candidate meets on its means (strict_sla).
	cfg := write(t, dir, "none.yaml", strings.Replace(string(must(os.ReadFile(filepath.Join(dir, "rec.yaml")))), "ttft_ms: 2000", "ttft_ms: 0.001", 1)+"  strict_sla: true\n")
	out := filepath.Join(dir, "out")
	_, stderr, code := runMain(t, "recommend", "-c", cfg, "--output-dir", out, "--quiet")
	if code != 1 || !strings.Contains(stderr, "dynosim: recommend: no feasible candidate among 12 evaluated") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(out, "recommendation.json")); err != nil {
		t.Fatal("no ledger written")
	}
	for _, args := range [][]string{{"recommend"}, {"recommend", "-c", cfg, "--parallel", "0"}, {"recommend", "-c", cfg, "--format", "xml"}} {
		if _, stderr, code := runMain(t, args...); code != 2 || !strings.HasPrefix(stderr, "dynosim: ") {
			t.Errorf("%v: exit %d: %s", args, code, stderr)
		}
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
