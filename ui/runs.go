package main

import (
	"cmp"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/dynosim/dynosim-web/core/report/metrics"
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

// afterPaint runs fn under the render lock once the browser has painted
// what is rendered now: a requestAnimationFrame callback runs before the
// next paint, a setTimeout queued from it after that paint. Work that can
// wait (the per-request table of a whole trace) thus never delays the
// headline figures (issue 32 item 8).
func (c *Root) afterPaint(fn func()) {
	var frame, after js.Func
	after = js.FuncOf(func(js.Value, []js.Value) any {
		after.Release()
		c.env.Lock()
		defer c.env.UnlockRender()
		fn()
		return nil
	})
	frame = js.FuncOf(func(js.Value, []js.Value) any {
		frame.Release()
		js.Global().Call("setTimeout", after, 0)
		return nil
	})
	js.Global().Call("requestAnimationFrame", frame)
}

// lazyRequests is a copy of a run's options (dynosim.runRaw's) that asks
// for the report first and the per-request records after it.
func lazyRequests(opts js.Value) js.Value {
	o := js.Global().Get("Object")
	lazy := o.New()
	lazy.Set("lazyRequests", true)
	return o.Call("assign", o.New(), opts, lazy)
}

// progressStatus is the bar's percentage and the status line of a run's
// progress message (dynosim.runRaw's onProgress): which phase runs, and
// how far the replay is.
func progressStatus(p js.Value) (percent int, status string) {
	done, total := p.Get("done").Int(), p.Get("total").Int()
	if total > 0 {
		percent = min(99, done*100/total)
	}
	if p.Get("phase").String() == "report" {
		return percent, "Building the report…"
	}
	return percent, fmt.Sprintf("Simulating… %d %% (%s of %s requests, %s s simulated)", percent,
		metrics.Format(float64(done)), metrics.Format(float64(total)), metrics.Format(math.Round(p.Get("simTimeMs").Float()/1000)))
}

// deferRequests builds run r's per-request table after the run's results
// are painted, from res.requests (the JSONL) or res.requestsLater (a
// Promise of it: dynosim.runRaw with lazyRequests). The Requests section and
// the CSV button appear when it is built.
func (c *Root) deferRequests(r *RunEntry, res js.Value) {
	build := func(q js.Value) {
		if q.Type() != js.TypeString {
			return
		}
		c.afterPaint(func() {
			t, err := parseRequestsText(q.String())
			if err != nil {
				return
			}
			r.Req = t
			if c.current() == r {
				c.Requests = t
			}
		})
	}
	if later := res.Get("requestsLater"); later.Type() == js.TypeObject {
		// not c.then: that would render the page once more for nothing
		var got js.Func
		got = js.FuncOf(func(_ js.Value, args []js.Value) any {
			got.Release()
			build(arg0(args))
			return nil
		})
		later.Call("then", got)
		return
	}
	build(res.Get("requests"))
}
