package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/core/report/schema"
)

// TestMain lets tests run the real main (exit status included) by
// re-executing the test binary with DYNOSIM_RUN_MAIN=1.
func TestMain(m *testing.M) {
	if os.Getenv("DYNOSIM_RUN_MAIN") == "1" {
		os.Args = append([]string{"dynosim"}, strings.Fields(os.Getenv("DYNOSIM_ARGS"))...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func runMain(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "DYNOSIM_RUN_MAIN=1", "DYNOSIM_ARGS="+strings.Join(args, " "))
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return o.String(), e.String(), code
}

func write(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestBadInputExitsTwoWithOneLine(t *testing.T) {
	dir := t.TempDir()
	good := `{"timestamp":0,"input_length":8,"output_length":2,"hash_ids":[1]}`
	tests := []struct {
		name string
		args func() []string
		want string
	}{
		{"a device is not a trace", func() []string {
			return []string{"predict", "--trace", "/dev/zero"}
		}, "dynosim: /dev/zero: not a regular file"},
		{"malformed JSON line", func() []string {
			return []string{"predict", "--trace", write(t, dir, "a.jsonl", good+"\n{nope\n")}
		}, "dynosim: a.jsonl:2: invalid JSON"},
		{"missing hash_ids", func() []string {
			return []string{"predict", "--trace", write(t, dir, "b.jsonl", `{"timestamp":0,"output_length":1}`)}
		}, "dynosim: b.jsonl:1: hash_ids: missing"},
		{"negative length", func() []string {
			return []string{"predict", "--trace", write(t, dir, "c.jsonl", good+"\n"+good+"\n"+`{"timestamp":5,"output_length":-3,"hash_ids":[1]}`)}
		}, "dynosim: c.jsonl:3: output_length: must be an integer ≥ 0, got -3"},
		{"non-integer hash id", func() []string {
			return []string{"predict", "--trace", write(t, dir, "d.jsonl", `{"timestamp":0,"output_length":1,"hash_ids":[1,"x"]}`)}
		}, "dynosim: d.jsonl:1: hash_ids: must be a list of numbers"},
		{"unknown YAML key", func() []string {
			return []string{"predict", "-c", write(t, dir, "e.yaml", "engine:\n  workers:\n    aggregated:\n      bogus: 1\n")}
		}, "dynosim: e.yaml:4: engine.workers.aggregated.bogus: unknown key"},
		{"zero workers", func() []string {
			return []string{"predict", "--set", "engine.workers.aggregated.parallelism.replicas=0"}
		}, "dynosim: --set engine.workers.aggregated.parallelism.replicas: must be ≥ 1, got 0"},
		{"block size 1", func() []string {
			return []string{"predict", "--set", "engine.workers.aggregated.kv_cache.block_size=1"}
		}, "dynosim: --set engine.workers.aggregated.kv_cache.block_size: must be ≥ 2 for vllm, got 1"},
		{"missing file", func() []string { return []string{"predict", "--trace", filepath.Join(dir, "none.jsonl")} }, "dynosim: " + filepath.Join(dir, "none.jsonl") + ": no such file"},
		{"bad format flag", func() []string { return []string{"predict", "--format", "xml"} }, "dynosim: --format: must be table or json"},
		{"capture without a directory", func() []string { return []string{"predict", "--capture-per-request"} }, "dynosim: --capture-per-request writes requests.jsonl into --output-dir DIR"},
		{"unknown key by --set", func() []string { return []string{"predict", "--set", "engine.bogus=1"} }, "dynosim: --set engine.bogus: unknown key"},
		{"unclosed bracket", func() []string {
			return []string{"predict", "-c", write(t, dir, "f.yaml", "x: 1\n# {\nengine: {mode: aggregated\nrouter: {}\n")}
		}, "dynosim: f.yaml:3: did not find expected ',' or '}': the '{' opened on this line is never closed"},
		{"timeline of a request the run lacks", func() []string { return []string{"predict", "--timeline", "1001"} }, "dynosim: timeline: request 1001 does not exist: the run has 1000 requests"},
		{"unknown command", func() []string { return []string{"predicts"} }, `dynosim: unknown command "predicts"`},
		{"validate takes no argument", func() []string { return []string{"validate", "docs"} }, `dynosim: validate: unexpected argument "docs"`},
		{"validate flag", func() []string { return []string{"validate", "--bogus"} }, "dynosim: validate: flag provided but not defined: -bogus"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := runMain(t, tc.args()...)
			if code != 2 {
				t.Fatalf("exit %d, stderr %q", code, stderr)
			}
			first, _, _ := strings.Cut(stderr, "\n")
			if !strings.HasPrefix(first, tc.want) {
				t.Fatalf("stderr %q, want prefix %q", stderr, tc.want)
			}
			if stdout != "" {
				t.Fatalf("stdout not empty: %q", stdout)
			}
			if strings.Contains(stderr, "panic") || strings.Contains(stderr, "goroutine") {
				t.Fatalf("panic: %s", stderr)
			}
		})
	}
}

func TestPredictOutputs(t *testing.T) {
	dir := t.TempDir()
	cfg := write(t, dir, "c.yaml", "traffic: {source: {type: trace, paths: [t.jsonl]}}\nengine: {workers: {aggregated: {parallelism: {replicas: 2}}}}\n")
	write(t, dir, "t.jsonl", `{"timestamp":0,"input_length":100,"output_length":3,"hash_ids":[1]}`+"\n"+`{"timestamp":10,"input_length":600,"output_length":5,"hash_ids":[1,2]}`+"\n")
	out := filepath.Join(dir, "out")

	var stdout, stderr bytes.Buffer
	if err := run([]string{"predict", "-c", cfg, "--format", "json", "--output-dir", out, "--capture-per-request"}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Summary map[string]float64 `json:"summary"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("stdout is not the report JSON: %v", err)
	}
	if rep.Summary[schema.CompletedRequests] != 2 || rep.Summary[schema.TotalOutputTokens] != 8 || rep.Summary[schema.WallTimeMs] <= 0 {
		t.Fatalf("summary %v", rep.Summary)
	}
	saved, err := os.ReadFile(filepath.Join(out, "prediction.json"))
	if err != nil || !bytes.Equal(saved, stdout.Bytes()) {
		t.Fatalf("prediction.json differs from stdout (%v)", err)
	}
	reqs, err := os.ReadFile(filepath.Join(out, "requests.jsonl"))
	if err != nil || bytes.Count(reqs, []byte("\n")) != 2 {
		t.Fatalf("requests.jsonl: %v %q", err, reqs)
	}

	// --timeline: the same report plus request 2's life; the table prints it.
	stdout.Reset()
	if err := run([]string{"predict", "-c", cfg, "--format", "json", "--timeline", "2"}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	var watched struct {
		Timeline struct {
			UUID   int `json:"uuid"`
			Events []struct {
				Event string `json:"event"`
			} `json:"events"`
		} `json:"request_timeline"`
		Breakdown struct {
			Requests int `json:"requests"`
		} `json:"ttft_breakdown"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &watched); err != nil || watched.Timeline.UUID != 2 || len(watched.Timeline.Events) < 5 || watched.Timeline.Events[0].Event != "arrival" || watched.Breakdown.Requests != 2 {
		t.Fatalf("--timeline 2: %v %+v", err, watched)
	}
	stdout.Reset()
	if err := run([]string{"predict", "-c", cfg, "--timeline", "2"}, &stdout, &stderr); err != nil || !strings.Contains(stdout.String(), "Request 2 timeline (ms):\n") || !strings.Contains(stdout.String(), "TTFT breakdown, mean ms (2 requests): frontend") {
		t.Fatalf("--timeline table: %v\n%s", err, stdout.String())
	}

	stdout.Reset()
	if err := run([]string{"predict"}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	// The embedded default's 1,000 requests, printed as an integer.
	if !strings.Contains(stdout.String(), "NVIDIA AIPerf | LLM Metrics") || !regexp.MustCompile(`Request Count \(requests\) +1,000\n`).MatchString(stdout.String()) {
		t.Fatalf("bare predict table:\n%s", stdout.String())
	}
}

// A crash is an internal error: exit status 1 and a message asking for a
// report, never the exit 2 of a clean rejection.
func TestPanicIsAnInternalError(t *testing.T) {
	testCommand = func() error { panic("boom") }
	defer func() { testCommand = nil }()
	var out, errw bytes.Buffer
	err := run([]string{"test-panic"}, &out, &errw)
	if err == nil || !strings.HasPrefix(err.Error(), "internal error: boom") || !strings.Contains(err.Error(), "please report") {
		t.Fatalf("error %v", err)
	}
	if exitCode(err) != 1 {
		t.Fatalf("exit %d, want 1", exitCode(err))
	}
	if exitCode(errors.New("bad input")) != 2 {
		t.Fatal("bad input must exit 2")
	}
}
