package recommend

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 29: every recommend config in testdata/hostile is refused with the
// error its first line names ("# want: SUBSTRING"), or ("# want: ledger
// SUBSTRING") parses into a bounded space whose search the page test runs
// against the CLI's (ui/test/recommend.test.mjs compares recommendation.json
// and looks for SUBSTRING in it). Never a panic, a hang or an OOM.
func TestHostileRecommendConfigs(t *testing.T) {
	names, err := filepath.Glob("testdata/hostile/*.yaml")
	if err != nil || len(names) == 0 {
		t.Fatalf("no hostile recommend configs: %v", err)
	}
	for _, path := range names {
		name := filepath.Base(path)
		t.Run(strings.TrimSuffix(name, ".yaml"), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			first, _, _ := bytes.Cut(data, []byte("\n"))
			want, ok := strings.CutPrefix(string(first), "# want: ")
			if !ok {
				t.Fatalf("first line %q, want \"# want: SUBSTRING\" or \"# want: ledger SUBSTRING\"", first)
			}
			sp, err := Parse(name, data, nil)
			if _, ledger := strings.CutPrefix(want, "ledger "); ledger {
				if err != nil {
					t.Fatalf("err = %v, want a space to search", err)
				}
				for _, d := range sp.Dims {
					if n := len(d.Values); n < 1 || n > MaxChoices {
						t.Fatalf("%s: %d values, want 1 to %d", d.Path, n, MaxChoices)
					}
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("err = %v\nwant it to contain %q", err, want)
			}
		})
	}
}
