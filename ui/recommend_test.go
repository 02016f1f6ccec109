package main

import (
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/core/recommend"
)

// Every recommend preset parses as `dynosim recommend -c` reads it, on the
// sample trace the page names, and stays small enough for a page search.
func TestRecPresetsParse(t *testing.T) {
	if len(RecPresets) < 3 {
		t.Fatalf("%d recommend presets", len(RecPresets))
	}
	for _, p := range RecPresets {
		sp, err := recommend.Parse("recommend.yaml", []byte(p.YAML), nil)
		if err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		if sp.Size() < 2 || sp.Size() > 12 {
			t.Errorf("%s: %d candidates", p.Name, sp.Size())
		}
		if !strings.Contains(string(sp.Base), "paths: [conversation_trace.jsonl]") || !strings.Contains(string(sp.Base), "requests: 200") {
			t.Errorf("%s: base\n%s", p.Name, sp.Base)
		}
	}
}
