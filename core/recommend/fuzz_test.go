package recommend

import (
	"math"
	"strconv"
	"strings"
	"testing"
)

// Issue 29 item 13: FuzzRecommendDomains feeds arbitrary domain specs to
// Parse (a range's min, max, step and scale as YAML text, or a whole
// choices list). Parse must return, never panic, and a space it accepts
// has at most MaxChoices values per dimension; a numeric range's values
// are distinct, increasing and within [min, max]. The range case runs
// to completion by construction (its count is fixed before any value is
// made); a loop that did not end would stall the fuzzer, which reports
// it.
func FuzzRecommendDomains(f *testing.F) {
	for _, s := range [][4]string{
		{"1e20", "1e20", "", ""},
		{"1e20", "1.0000000000000002e20", "10", ""},
		{"0", "1", "0.1", "linear"},
		{"-3", "-1", "", ""},
		{"1", "4096", "", ""},
		{"5e-324", "1.7976931348623157e308", "", "log"},
		{"-1.7e308", "1.7e308", "1e308", ""},
		{"9007199254740991", "9007199254740993", "", ""},
		{"1", "64", "", "log"},
		{"0x10", "1_000", "!!int 3", ""},
		{"[1, 2]", "{a: 1}", "null", "log"},
	} {
		f.Add(s[0], s[1], s[2], s[3])
	}
	f.Fuzz(func(t *testing.T, lo, hi, step, scale string) {
		rng := "{min: " + lo + ", max: " + hi
		if step != "" {
			rng += ", step: " + step
		}
		if scale != "" {
			rng += ", scale: " + scale
		}
		rng += "}"
		for _, doc := range []string{
			"x:\n  range: " + rng + "\n",
			"x:\n  choices: [" + lo + ", " + hi + ", " + step + "]\n",
		} {
			sp, err := Parse("f.yaml", []byte(doc), nil)
			if err != nil {
				continue
			}
			if sp.Size() < 1 {
				t.Fatalf("%q: space of %d candidates", doc, sp.Size())
			}
			for _, d := range sp.Dims {
				if len(d.Values) < 1 || len(d.Values) > MaxChoices {
					t.Fatalf("%q: %s has %d values (1 to %d allowed)", doc, d.Path, len(d.Values), MaxChoices)
				}
				if !strings.Contains(doc, "range:") {
					continue
				}
				checkRangeValues(t, doc, d.Values, lo, hi)
			}
		}
	})
}

// checkRangeValues: a numeric range's values are increasing, hence
// distinct, and (when its bounds read as plain numbers) within them.
func checkRangeValues(t *testing.T, doc string, vals []string, lo, hi string) {
	t.Helper()
	min, err1 := strconv.ParseFloat(lo, 64)
	max, err2 := strconv.ParseFloat(hi, 64)
	if err1 != nil || err2 != nil {
		min, max = math.Inf(-1), math.Inf(1)
	}
	prev := math.Inf(-1)
	for i, v := range vals {
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return // a value written as YAML the fuzzer made up (e.g. a tag)
		}
		if math.IsNaN(x) || math.IsInf(x, 0) || x <= prev {
			t.Fatalf("%q: value %d is %s after %v: not finite and increasing", doc, i+1, v, prev)
		}
		if x < min || x > max {
			t.Fatalf("%q: value %d is %s, outside [%v, %v]", doc, i+1, v, min, max)
		}
		prev = x
	}
}
