package validation

import (
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/timing"
)

var update = flag.Bool("update", false, "rewrite docs/validation.md and timing/validated.go")

const (
	docPath    = "../../../docs/validation.md"
	badgesPath = "../../../timing/validated.go"
)

// TestValidationDoc replays every public measurement and fails when
// docs/validation.md or the page's badge table is stale.
func TestValidationDoc(t *testing.T) {
	if testing.Short() {
		t.Skip("replays ~1,000 public serving points")
	}
	f, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	// Regression bars, a little above today's figures (docs/validation.md):
	// a change that makes the model worse than this fails here, not only
	// in a regenerated doc nobody reads.
	if s := f.Summary; s.Points < 1000 || s.HeldOutTP > 0.15 {
		t.Errorf("fixed-concurrency points: %d, held-out median TPOT error %.1f %%, want ≥ 1000 and ≤ 15 %%", s.Points, 100*s.HeldOutTP)
	}
	if h := f.Summary.Families["Hopper"]; h.OpenLoopRuns < 12 || h.OpenLoopTTFT > 10 || h.OpenLoopITL > 10 {
		t.Errorf("open-loop runs: %d, median TTFT error %.1f %%, ITL %.1f %%, want ≥ 12 runs within 10 %%", h.OpenLoopRuns, h.OpenLoopTTFT, h.OpenLoopITL)
	}
	for _, out := range []struct{ path, text string }{{docPath, f.Doc}, {badgesPath, f.Badges}} {
		if *update {
			if err := os.WriteFile(out.path, []byte(out.text), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		old, err := os.ReadFile(out.path)
		if err != nil {
			t.Fatal(err)
		}
		if string(old) != out.text {
			t.Errorf("%s is stale: run go test ./cmd/dynosim/validation -run TestValidationDoc -update", out.path)
		}
	}
}

// Every point parses into something the simulator can run, and a broken
// row names its line and column.
func TestParseAIC(t *testing.T) {
	pts, err := AICPoints()
	if err != nil {
		t.Fatal(err)
	}
	if len(pts) < 500 {
		t.Fatalf("%d points, want ≥ 500", len(pts))
	}
	head := strings.SplitN(string(aicCSV), "\n", 2)[0]
	row := strings.SplitN(string(aicCSV), "\n", 3)[1]
	for _, c := range []struct{ name, text, want string }{
		{"good row", row, ""},
		{"NaN time", row[:strings.LastIndexByte(row, ',')+1] + "NaN", `x.csv:2: silicon_tpot_ms: want a time > 0, got "NaN"`},
		{"unknown model", strings.Replace(row, pts[0].Checkpoint, "acme/Model-1B", 1), `x.csv:2: model_path: "acme/Model-1B" is not priced`},
		{"missing column", strings.Replace(head, "silicon_tpot_ms", "tpot", 1) + "\n", `x.csv: no column "silicon_tpot_ms"`},
	} {
		text := c.text
		if c.name != "missing column" {
			text = head + "\n" + c.text + "\n"
		}
		_, err := parseAIC("x.csv", []byte(text))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || err.Error() != c.want):
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
}

// The badge states the family's end-to-end error where there is one and
// says "not validated" where no public serving measurement exists.
func TestBadgeNamesFamily(t *testing.T) {
	for _, c := range []struct{ gpu, want string }{
		{"h200_sxm", "held-out open-loop runs"},
		{"b200", "Blackwell fixed-concurrency points"},
		{"l40s", "not validated end to end on l40s"},
		{"rtx_4090", "not validated end to end on rtx_4090"},
	} {
		if got := timing.Validation("default", c.gpu); !strings.Contains(got, c.want) {
			t.Errorf("%s: badge %q, want it to say %q", c.gpu, got, c.want)
		}
	}
}
