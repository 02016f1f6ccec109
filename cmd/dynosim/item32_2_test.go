package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 32 item 2: the console prints the recommendation first
// ("Deploy: …" with its headline figures), the note when no candidate
// meets the SLA, the edge warnings, then the top N with pool-named labels,
// equal candidates collapsed into one row.
func TestItem32_2RecommendConsole(t *testing.T) {
	dir := t.TempDir()
	cfg := recConfig(t, dir, "")
	tests := []struct {
		name string
		sets []string
		want []string // substrings of stdout, in order
		not  []string
	}{
		{"no candidate meets the SLA", nil, []string{
			"Deploy: aggregated 4 × h100_sxm TP1, kv_router — p99 TTFT ",
			"does NOT meet the SLA (85.0% of requests within every target) [candidate-000010]\n",
			"note: no candidate meets the SLA; this one comes closest",
			"warning: the best sits at the edge of engine.workers.aggregated.parallelism.replicas (4 of [1, 2, 4])\n",
			"Target throughput_per_gpu",
			"deployment", "aggregated 1 × h100_sxm TP1, round_robin", "+1: candidate-000002\n",
		}, []string{"candidate-000002  "}},
		{"every candidate meets the SLA", []string{"--set", "evaluation.sla.ttft_ms=1e9", "--set", "evaluation.sla.itl_ms=1e9"}, []string{
			"Deploy: aggregated 1 × h100_sxm TP1, round_robin — ", "meets the SLA (100.0% of requests within every target) [candidate-000001]\n",
			"warning: the best sits at the edge of engine.workers.aggregated.parallelism.replicas (1 of [1, 2, 4])\n",
		}, []string{"note:", "NOT"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if err := run(append([]string{"recommend", "-c", cfg, "--quiet"}, tc.sets...), &stdout, &stderr); err != nil {
				t.Fatal(err, stderr.String())
			}
			out := stdout.String()
			if !strings.HasPrefix(out, "Deploy: ") {
				t.Fatalf("the first line is not the recommendation:\n%s", out)
			}
			rest := out
			for _, w := range tc.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("no %q (in order) in\n%s", w, out)
				}
				rest = rest[i+len(w):]
			}
			for _, w := range tc.not {
				if strings.Contains(out, w) {
					t.Fatalf("%q in\n%s", w, out)
				}
			}
		})
	}
}

// Issue 32 item 1: recommend --trace FILE is predict's --trace: it
// replaces traffic.source.paths (a config naming a missing file runs), the
// recommendations name it so predict reproduces them, and a file that
// cannot be read exits 2 naming it.
func TestItem32_2RecommendTrace(t *testing.T) {
	dir := t.TempDir()
	recConfig(t, dir, "")
	text := strings.Replace(string(must(os.ReadFile(filepath.Join(dir, "rec.yaml")))), "paths: [t.jsonl]", "paths: [missing.jsonl]", 1)
	cfg := write(t, dir, "elsewhere.yaml", text)
	tr := filepath.Join(dir, "t.jsonl")
	tests := []struct {
		name  string
		trace string
		code  int
		err   string // in stderr
	}{
		{"a trace", tr, 0, ""},
		{"not found", filepath.Join(dir, "nope.jsonl"), 2, "dynosim: " + filepath.Join(dir, "nope.jsonl") + ": no such file or directory"},
		{"a directory", dir, 2, "dynosim: " + dir + ": is a directory"},
		{"a device", "/dev/zero", 2, "dynosim: /dev/zero: not a regular file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			stdout, stderr, code := runMain(t, "recommend", "-c", cfg, "--trace", tc.trace, "--output-dir", out, "--quiet", "--format", "json")
			if code != tc.code || !strings.Contains(stderr, tc.err) {
				t.Fatalf("exit %d, want %d: %s", code, tc.code, stderr)
			}
			if tc.code != 0 {
				return
			}
			// The same ledger as the config naming the trace itself.
			var direct bytes.Buffer
			ref := filepath.Join(t.TempDir(), "ref")
			if err := run([]string{"recommend", "-c", filepath.Join(dir, "rec.yaml"), "--output-dir", ref, "--quiet", "--format", "json"}, &direct, &direct); err != nil {
				t.Fatal(err)
			}
			a, b := must(os.ReadFile(filepath.Join(out, "recommendation.csv"))), must(os.ReadFile(filepath.Join(ref, "recommendation.csv")))
			if !bytes.Equal(a, b) {
				t.Fatal("--trace gives another ledger than the config's own path")
			}
			var rows []struct {
				ConfigPath string `json:"config_path"`
			}
			if err := json.Unmarshal([]byte(stdout), &rows); err != nil || len(rows) == 0 {
				t.Fatalf("rows %q (%v)", stdout, err)
			}
			t.Chdir(t.TempDir())
			var o, e bytes.Buffer
			if err := run([]string{"predict", "-c", rows[0].ConfigPath, "--format", "json"}, &o, &e); err != nil {
				t.Fatalf("predict %s: %v", rows[0].ConfigPath, err)
			}
		})
	}
}
