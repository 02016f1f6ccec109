package main

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/cmd/dynosim/validation"
)

// TestItem33_2ValidateJSON: `dynosim validate --format json` prints
// {"sources": [{name, points, gated, median_abs_error {tpot, ttft, e2e},
// p90_abs_error, by_gpu, held_out}]}, and every figure is the one the text
// report (docs/validation.md, which TestValidationDoc keeps fresh) shows.
// A bad --format is a usage error.
func TestItem33_2ValidateJSON(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		err  string
	}{
		{"unknown format", []string{"validate", "--format", "xml"}, `validate: --format: want text or json, got "xml"`},
		{"unknown kernels", []string{"validate", "--kernels", "tables"}, `validate: --kernels: want curves or aic, got "tables"`}, // issue 33 item 3
		{"json", []string{"validate", "--format", "json"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.err == "" && testing.Short() {
				t.Skip("replays ~1,000 public serving points")
			}
			var stdout, stderr bytes.Buffer
			err := run(c.args, &stdout, &stderr)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err, stderr.String())
			}
			var raw struct {
				Sources []map[string]json.RawMessage `json:"sources"`
			}
			if err := json.Unmarshal(stdout.Bytes(), &raw); err != nil || len(raw.Sources) < 2 {
				t.Fatalf("%v: %d sources", err, len(raw.Sources))
			}
			for _, s := range raw.Sources {
				for _, k := range []string{"name", "points", "gated", "median_abs_error", "p90_abs_error", "by_gpu", "held_out"} {
					if _, ok := s[k]; !ok {
						t.Errorf("a source has no %q", k)
					}
				}
				var e struct{ TPOT, TTFT, E2E *float64 }
				if err := json.Unmarshal(s["median_abs_error"], &e); err != nil || e.TPOT == nil || e.TTFT == nil || e.E2E == nil {
					t.Errorf("median_abs_error %s: want tpot, ttft and e2e", s["median_abs_error"])
				}
			}
			doc, err := os.ReadFile("../../docs/validation.md")
			if err != nil {
				t.Fatal(err)
			}
			if err := validation.CompareDoc(stdout.Bytes(), string(doc)); err != nil {
				t.Error(err)
			}
		})
	}
}
