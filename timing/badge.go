package timing

import (
	"fmt"
	"slices"
	"strings"
)

// SourceValidation is the end-to-end validation of the roofline on one
// public source's points for one GPU family and engine: median absolute
// errors in percent (docs/validation.md, "By source"; generated into
// validated.go by the validation harness).
type SourceValidation struct {
	Source   string // "InferenceMAX Llama-3.1-70B", "BLIS H100 runs", …
	Protocol string // "fixed-concurrency points" | "open-loop runs"
	// Gated: the validation holds the source to a bar; a reported source
	// (replayed with a recipe its measurements do not state) is named so.
	Gated  bool
	Family string // Family(gpu)
	Engine string // vllm | sglang | trtllm
	Points int
	// TPOT and TTFT over all the points, and over the held-out ones (never
	// looked at while fitting; HeldOutPoints 0: none).
	TPOTPct, TTFTPct               float64
	HeldOutPoints                  int
	HeldOutTPOTPct, HeldOutTTFTPct float64
}

// closedLoop is the protocol of a closed-loop run (traffic.load.type
// concurrency); the other load types are open loop.
const closedLoop = "fixed-concurrency points"

// closest picks the source nearest to a run on gpu with engine and load
// type load: same GPU family and engine, then a gated source before a
// reported one, then the source whose protocol matches the run's (closed
// or open loop), then the most points.
func closest(gpu, engine, load string) (SourceValidation, bool) {
	var best SourceValidation
	found := false
	score := func(v SourceValidation) int {
		s := 0
		if v.Gated {
			s += 2
		}
		if (v.Protocol == closedLoop) == (load == "concurrency") {
			s++
		}
		return s
	}
	for _, v := range validated {
		if v.Family != Family(gpu) || v.Engine != engine {
			continue
		}
		if !found || score(v) > score(best) || score(v) == score(best) && v.Points > best.Points {
			best, found = v, true
		}
	}
	return best, found
}

// Validated reports whether Validation states measured figures for the
// default timing on gpu under engine and load (a source closest to it).
func Validated(gpu, engine, load string) bool {
	_, ok := closest(gpu, engine, load)
	return ok
}

// Validation says, for a timing type on a GPU under an engine and a load
// type, how far its predictions can be trusted; the page shows it as the
// timing badge. The default timing states the error of the public source
// closest to the run (closest), or "not validated" with the reason.
func Validation(kind, gpu, engine, load string) string {
	switch kind {
	case "default":
		v, ok := closest(gpu, engine, load)
		if !ok {
			var others []string
			for _, v := range validated {
				if v.Family == Family(gpu) && !slices.Contains(others, v.Engine) {
					others = append(others, v.Engine)
				}
			}
			why := "no public serving measurement"
			if len(others) > 0 {
				slices.Sort(others)
				why = fmt.Sprintf("the public %s serving measurements are of %s, not %s", Family(gpu), strings.Join(others, ", "), engine)
			}
			return fmt.Sprintf("roofline: not validated end to end on %s with %s (%s); within %.1f %% of %d public single-pass measurements (docs/timing.md)", normName(gpu), engine, why, RooflineWorstPct, RooflineChecked)
		}
		s := fmt.Sprintf("roofline: median error %.1f %% TPOT, %.1f %% TTFT on %d public %s %s with %s (%s", v.TPOTPct, v.TTFTPct, v.Points, v.Family, v.Protocol, v.Engine, v.Source)
		if !v.Gated {
			s += ", reported, not gated: its client settings are not published"
		}
		if v.HeldOutPoints > 0 {
			s += fmt.Sprintf("; held out: %.1f %% TPOT, %.1f %% TTFT on %d", v.HeldOutTPOTPct, v.HeldOutTTFTPct, v.HeldOutPoints)
		}
		return s + "; docs/validation.md)"
	case "polynomial":
		return "polynomial: the reference's uncalibrated curve; model and hardware ignored"
	case "fixed":
		return "fixed: the pass times you gave; model and hardware ignored"
	case "profile":
		return "profile: interpolated from your measured table; trust it within the range it covers"
	}
	return kind
}
