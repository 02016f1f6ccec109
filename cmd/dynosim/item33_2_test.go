package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/cmd/dynosim/validation"
)

// TestItem33_2ValidateJSON: `dynosim validate` writes Generate's JSON
// under --format json, its doc (docs/validation.md) otherwise, to stdout or
// -o FILE, with --kernels set before it runs; bad flags are usage errors.
// What Generate's JSON holds ({"sources": [{name, points, gated,
// median_abs_error {tpot, ttft, e2e}, p90_abs_error, by_gpu, held_out}]},
// the same figures as the doc) is the validation package's
// TestItem33_2ValidateJSON and TestValidationDoc, which replay every source.
func TestItem33_2ValidateJSON(t *testing.T) {
	var kernels string
	generate = func() (validation.Files, error) {
		kernels = validation.Kernels()
		return validation.Files{Doc: "# doc\n", JSON: []byte(`{"sources":[]}`)}, nil
	}
	defer func() { generate = validation.Generate; validation.SetKernels("default") }()
	out := filepath.Join(t.TempDir(), "v.json")
	for _, c := range []struct {
		name     string
		args     []string
		err      string
		stdout   string
		kernels  string
		fileText string
	}{
		{"unknown format", []string{"validate", "--format", "xml"}, `validate: --format: want text or json, got "xml"`, "", "", ""},
		{"unknown kernels", []string{"validate", "--kernels", "tables"}, `validate: --kernels: want default, curves or aic, got "tables"`, "", "", ""}, // issue 33 item 3
		{"text", []string{"validate"}, "", "# doc\n", "default", ""},
		{"json", []string{"validate", "--format", "json"}, "", `{"sources":[]}`, "default", ""},
		{"text under curves", []string{"validate", "--kernels", "curves"}, "", "# doc\n", "curves", ""},
		{"json under aic", []string{"validate", "--format", "json", "--kernels", "aic"}, "", `{"sources":[]}`, "aic", ""},
		{"json to a file", []string{"validate", "--format", "json", "-o", out}, "", "", "default", `{"sources":[]}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			kernels = ""
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
			if stdout.String() != c.stdout || kernels != c.kernels {
				t.Errorf("stdout %q with kernels %q, want %q with %q", stdout.String(), kernels, c.stdout, c.kernels)
			}
			if c.fileText != "" {
				if b, err := os.ReadFile(out); err != nil || string(b) != c.fileText {
					t.Errorf("-o file %q (%v), want %q", b, err, c.fileText)
				}
			}
		})
	}
}
