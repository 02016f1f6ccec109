package main

import (
	"cmp"
	"fmt"
	"sort"
	"strings"

	"github.com/vugu/vugu/js"
	"gopkg.in/yaml.v3"
)

// RunEntry is one finished run kept for comparison.
type RunEntry struct {
	ID      int
	Name    string
	Config  string // the config it ran
	Trace   string // TraceLabel() when it ran
	key     string // inputKey() when it ran: results are stale once it changes
	JSON    string
	report  js.Value // the report object for the plots
	Parsed  *parsedReport
	Table   string
	Req     *RequestTable
	RunURL  string
	PageURL string   // its share link, this page with ?run=<id> (sharerun.go)
	Shared  string   // "Run <id> on <host>…" for a run loaded from a share link
	opts    js.Value // the inputs it ran with (dynosim.runRaw's options)
}

// maxRuns is how many runs the compare list keeps (the oldest goes first).
const maxRuns = 8

// flatten turns a YAML document into path=value pairs ("a.b[0].c" → "1").
func flatten(y string) map[string]string {
	var v any
	if err := yaml.Unmarshal([]byte(y), &v); err != nil {
		return nil
	}
	out := map[string]string{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, c := range x {
				p := k
				if prefix != "" {
					p = prefix + "." + k
				}
				walk(p, c)
			}
		case []any:
			for i, c := range x {
				walk(fmt.Sprintf("%s[%d]", prefix, i), c)
			}
		case nil:
			out[prefix] = "null"
		default:
			out[prefix] = fmt.Sprint(x)
		}
	}
	walk("", v)
	return out
}

// shortPath names a deep config path by its last segment
// (engine.workers.aggregated.parallelism.replicas → replicas), a short one
// in full (router.policy).
func shortPath(p string) string {
	if segs := strings.Split(p, "."); len(segs) >= 4 {
		return segs[len(segs)-1]
	}
	return p
}

// runInputs are what a run's default name compares: its config, trace
// label and timing profile (the .npz its pools were timed by, "" for none).
type runInputs struct{ config, trace, profile string }

// runName is the default name of a run: the config paths that changed
// against the previous run ("replicas=4, router.policy=kv_router"), the
// trace and the timing profile when they changed, else "run n".
func runName(prev, cur runInputs, n int, first bool) string {
	if first {
		return fmt.Sprintf("run %d", n)
	}
	a, b := flatten(prev.config), flatten(cur.config)
	var changes []string
	for k, v := range b {
		if a[k] != v {
			changes = append(changes, k)
		}
	}
	var removed []string
	for k := range a {
		if _, ok := b[k]; !ok {
			removed = append(removed, k)
		}
	}
	sort.Strings(changes)
	sort.Strings(removed)
	var parts []string
	if cur.trace != prev.trace {
		parts = append(parts, "trace="+strings.TrimPrefix(cur.trace, "sample: "))
	}
	if cur.profile != prev.profile {
		// issue 30 item 5: a run timed by another profile is another run
		parts = append(parts, "profile="+cmp.Or(cur.profile, "none"))
	}
	for _, k := range changes {
		parts = append(parts, shortPath(k)+"="+b[k])
	}
	for _, k := range removed {
		parts = append(parts, "−"+shortPath(k))
	}
	if len(parts) == 0 {
		return fmt.Sprintf("run %d (same inputs)", n)
	}
	if len(parts) > 3 {
		parts = append(parts[:3], fmt.Sprintf("+%d more", len(parts)-3))
	}
	return strings.Join(parts, ", ")
}

// baselineIndex is the index in runs of the run the current (last) one is
// compared with: the chosen id, else the one before it; -1 for none.
func baselineIndex(runs []*RunEntry, chosen int) int {
	if len(runs) < 2 {
		return -1
	}
	for i, r := range runs[:len(runs)-1] {
		if r.ID == chosen {
			return i
		}
	}
	return len(runs) - 2
}
