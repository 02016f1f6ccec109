package validation

import (
	"encoding/json"
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
	// in a regenerated doc nobody reads. These are the gates the JSON's
	// "gated" sources name.
	var v ValidationJSON
	if err := json.Unmarshal(f.JSON, &v); err != nil {
		t.Fatal(err)
	}
	src := map[string]SourceJSON{}
	for _, s := range v.Sources {
		src[s.Name] = s
	}
	// AIConfigurator's other rows, under the aiperf recipe: reported, not
	// gated (their pipeline publishes no client settings), with a bar that
	// catches a model made worse on them.
	if s := src[AIPerfSource]; s.Gated || s.Points != 602 || *s.MedianAbsError.TPOT > 12 {
		t.Errorf("aiperf recipe: gated %v, %d points, median TPOT error %.1f %%, want reported, 602, ≤ 12 %%", s.Gated, s.Points, *s.MedianAbsError.TPOT)
	}
	if h := src["BLIS H100 runs"].HeldOut; !src["BLIS H100 runs"].Gated || h.Points < 12 || *h.MedianAbsError.TTFT > 10 || *h.MedianAbsError.TPOT > 10 {
		t.Errorf("open-loop runs: %d held out, median TTFT error %.1f %%, ITL %.1f %%, want ≥ 12 runs within 10 %%", h.Points, *h.MedianAbsError.TTFT, *h.MedianAbsError.TPOT)
	}
	if s := src[IMAXSource]; !s.Gated || s.Points != 441 || *s.MedianAbsError.TTFT > 15 || *s.MedianAbsError.TPOT > 8 {
		t.Errorf("InferenceMAX: %d points, median TTFT error %.1f %%, TPOT %.1f %%, want 441 within 15 %% and 8 %%", s.Points, *s.MedianAbsError.TTFT, *s.MedianAbsError.TPOT)
	}
	// Its held-out part (imaxFit), reported separately: never fitted.
	if h := src[IMAXSource].HeldOut; h.Points != 264 || len(h.SignedTPOTByEngine) != 2 {
		t.Errorf("InferenceMAX held out: %d points, signed TPOT by engine %v, want 264 of vllm and trtllm", h.Points, h.SignedTPOTByEngine)
	}
	if err := CompareDoc(f.JSON, f.Doc); err != nil {
		t.Error(err)
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

// The badge states the error of the source closest to the run (same GPU
// family and engine; a gated source before a reported one, which it marks;
// the protocol of the run's load type) and says "not validated", with the
// reason, where no public measurement matches.
func TestBadgeNamesFamily(t *testing.T) {
	for _, c := range []struct{ gpu, engine, load, want string }{
		{"h200_sxm", "vllm", "trace_timestamps", "public Hopper open-loop runs with vllm (BLIS H100 runs; held out:"},
		{"h100_sxm", "vllm", "concurrency", "public Hopper fixed-concurrency points with vllm (InferenceMAX Llama-3.1-70B; held out:"},
		{"h100_sxm", "trtllm", "concurrency", "public Hopper fixed-concurrency points with trtllm (InferenceMAX Llama-3.1-70B; held out:"},
		{"h100_sxm", "sglang", "poisson", "public Hopper fixed-concurrency points with sglang (AIConfigurator silicon_sample, aiperf recipe, reported, not gated: its client settings are not published; held out:"},
		{"b200", "trtllm", "concurrency", "public Blackwell fixed-concurrency points with trtllm"},
		{"b200", "sglang", "concurrency", "not validated end to end on b200 with sglang (the public Blackwell serving measurements are of trtllm, vllm, not sglang)"},
		{"l40s", "vllm", "concurrency", "not validated end to end on l40s with vllm (no public serving measurement)"},
		{"rtx_4090", "vllm", "poisson", "not validated end to end on rtx_4090"},
	} {
		if got := timing.Validation("default", c.gpu, c.engine, c.load); !strings.Contains(got, c.want) {
			t.Errorf("%s %s %s: badge %q, want it to say %q", c.gpu, c.engine, c.load, got, c.want)
		}
	}
}
