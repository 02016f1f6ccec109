package deploy

import (
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/core/config"
)

// TestItem33_6SGLangMemFraction: an SGLang worker without memory_fraction
// is launched without --mem-fraction-static under engine.semantics real,
// so SGLang derives its own default as the simulation did; a written
// fraction, or the mocker's 0.9, is passed on.
func TestItem33_6SGLangMemFraction(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, want string // want "": no flag
	}{
		{"real default", "engine: {backend: sglang}", ""},
		{"real explicit", "engine: {backend: sglang, workers: {aggregated: {kv_cache: {capacity: {memory_fraction: 0.8}}}}}", "--mem-fraction-static 0.8"},
		{"mocker", "engine: {backend: sglang, semantics: mocker}", "--mem-fraction-static 0.9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.Parse("t.yaml", []byte(tc.yaml), nil)
			if err != nil {
				t.Fatal(err)
			}
			launch, _, err := Render(&cfg)
			if err != nil {
				t.Fatal(err)
			}
			flat := strings.Join(strings.Fields(strings.ReplaceAll(string(launch), "\\\n", " ")), " ")
			if tc.want == "" && strings.Contains(flat, "--mem-fraction-static") {
				t.Fatalf("--mem-fraction-static given:\n%s", launch)
			}
			if tc.want != "" && !strings.Contains(flat, tc.want) {
				t.Fatalf("no %q in:\n%s", tc.want, launch)
			}
		})
	}
}
