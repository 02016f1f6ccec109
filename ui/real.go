package main

import (
	"fmt"
	"math"
	"strings"

	"github.com/dynosim/dynosim-web/core/report/schema"
	"github.com/vugu/vugu"
	"github.com/vugu/vugu/js"
)

// This file: a real run beside the prediction. The user loads a benchmark's
// exports (AIPerf's profile_export_aiperf.json and/or profile_export.jsonl,
// or a `vllm bench serve --save-result` JSON); the simulator worker parses
// them (core/measured, behind dynosim.compare) against the shown run's
// report, and the page shows measured vs predicted per metric and the CDFs
// overlaid (public/explain.js). The files stay loaded: each new run is
// compared again.

// realState is the real-run part of Root's state.
type realState struct {
	Real      *RealView
	RealBusy  bool
	realFiles js.Value // [{name, data: File}] of the loaded files
	realNames string
	realSeq   int
	realError string // the error this part put in Root.Error
	realTrace string // the run's requests as a trace (convert-trace), "" if it has none
	realNote  string // what that trace had to assume
}

// RealView is the comparison of the shown run with a real one: the
// headline rows, the others (folded away) and a note when the prediction
// did not replay the measured workload.
type RealView struct {
	Tool  string
	Files string
	Rows  []RealRow
	More  []RealRow
	Note  string
	// CanReplay: the run has per-request records (or a summary to stand
	// for them) that can become the trace.
	CanReplay bool
}

// RealRow is one metric measured and predicted.
type RealRow struct {
	Key, Measured, Predicted, Error string
	Bad                             bool // the prediction is off by more than 10 %
}

// realMetric is one row of dynosim.compare's answer.
type realMetric struct {
	Key                        string
	Measured, Predicted, Error float64
}

// headline reports whether a compared key is shown before the fold: the
// mean, median, p90 and p99 of TTFT, ITL, TPOT and E2E latency, and the
// request and output throughputs (core/measured orders the rows).
func headline(k string) bool {
	if k == schema.RequestThroughputRPS || k == schema.OutputThroughputTokS {
		return true
	}
	for _, f := range []schema.Family{schema.TTFT, schema.ITL, schema.TPOT, schema.E2E} {
		for _, s := range []schema.Stat{schema.Mean, schema.Median, schema.P90, schema.P99} {
			if k == f.Key(s) {
				return true
			}
		}
	}
	return false
}

// realView splits the rows at the fold and notes a workload mismatch.
func realView(tool, files string, ms []realMetric) *RealView {
	v := &RealView{Tool: tool, Files: files}
	for _, r := range realRows(ms) {
		if headline(r.Key) {
			v.Rows = append(v.Rows, r)
		} else {
			v.More = append(v.More, r)
		}
	}
	v.Note = workloadNote(ms)
	return v
}

// workloadNote says when the prediction replayed another workload than the
// measured one (request count or mean lengths 10 % apart): then the errors
// mix the model's error with the difference in load.
func workloadNote(ms []realMetric) string {
	what := map[string]string{schema.CompletedRequests: "completed requests", schema.InputLen.Key(schema.Mean): "mean prompt tokens",
		schema.OutputLen.Key(schema.Mean): "mean output tokens"}
	var diffs []string
	for _, m := range ms {
		if w, ok := what[m.Key]; ok && math.Abs(m.Error) > 0.10 {
			diffs = append(diffs, fmt.Sprintf("%s %s measured vs %s predicted", w, formatNum(m.Measured), formatNum(m.Predicted)))
		}
	}
	if len(diffs) == 0 {
		return ""
	}
	return "This prediction replayed another workload than the real run (" + strings.Join(diffs, "; ") +
		"), so the errors mix the simulator's error with the difference in load: predict the benchmark's own requests to compare like with like."
}

func formatNum(v float64) string { return formatKey("", math.Round(v*100)/100) }

// realRows formats the comparison rows.
func realRows(ms []realMetric) []RealRow {
	out := make([]RealRow, 0, len(ms))
	for _, m := range ms {
		r := RealRow{Key: m.Key, Measured: formatKey(m.Key, m.Measured), Predicted: formatKey(m.Key, m.Predicted), Error: "—"}
		if !math.IsNaN(m.Error) && !math.IsInf(m.Error, 0) {
			r.Error = fmt.Sprintf("%+.1f %%", m.Error*100)
			r.Bad = math.Abs(m.Error) > 0.10
		}
		out = append(out, r)
	}
	return out
}

// OnRealFiles loads the files chosen in the "Real run" input and compares.
func (c *Root) OnRealFiles(event vugu.DOMEvent) {
	files := event.JSEventTarget().Get("files")
	if !files.Truthy() || files.Length() == 0 {
		return
	}
	list := js.Global().Get("Array").New()
	var names []string
	for i := 0; i < files.Length(); i++ {
		f := files.Index(i)
		o := js.Global().Get("Object").New()
		o.Set("name", f.Get("name").String())
		setJS(o, "data", f)
		list.Call("push", o)
		names = append(names, f.Get("name").String())
	}
	c.realFiles, c.realNames = list, strings.Join(names, ", ")
	c.compareReal()
}

// ClearReal drops the loaded real run.
func (c *Root) ClearReal() {
	c.realSeq++
	c.realFiles, c.realNames, c.Real, c.RealBusy = js.Undefined(), "", nil, false
	c.clearRealError()
	c.drawReal(js.Null(), js.Null())
	if el := js.Global().Get("document").Call("getElementById", "real-input"); el.Truthy() {
		el.Set("value", "")
	}
}

func (c *Root) clearRealError() {
	if c.realError != "" && c.Error == c.realError {
		c.Error = ""
	}
	c.realError = ""
}

// compareReal compares the loaded real run with the shown run.
func (c *Root) compareReal() {
	c.realSeq++
	seq := c.realSeq
	r := c.current()
	if r == nil || !c.realFiles.Truthy() {
		c.Real, c.RealBusy = nil, false
		c.drawReal(js.Null(), js.Null())
		return
	}
	c.RealBusy = true
	names := c.realNames
	opts := js.Global().Get("Object").New()
	setJS(opts, "files", c.realFiles)
	opts.Set("report", r.JSON)
	c.then(dynosim().Call("compare", opts), func(res js.Value) {
		if seq != c.realSeq {
			return
		}
		c.RealBusy = false
		c.clearRealError()
		var ms []realMetric
		rows := res.Get("rows")
		for i := 0; rows.Truthy() && i < rows.Length(); i++ {
			row := rows.Index(i)
			ms = append(ms, realMetric{Key: jsString(row.Get("key")), Measured: jsNum(row.Get("measured")),
				Predicted: jsNum(row.Get("predicted")), Error: jsNum(row.Get("error"))})
		}
		c.Real = realView(jsString(res.Get("tool")), names, ms)
		c.realTrace, c.realNote = jsString(res.Get("trace")), jsString(res.Get("trace_note"))
		c.Real.CanReplay = c.realTrace != ""
		c.drawReal(res.Get("cdf"), r.report)
	}, func(msg string) {
		if seq != c.realSeq {
			return
		}
		// the files are dropped: the next run would only repeat the error
		c.RealBusy, c.Real, c.realFiles, c.realNames = false, nil, js.Undefined(), ""
		c.drawReal(js.Null(), js.Null())
		if el := js.Global().Get("document").Call("getElementById", "real-input"); el.Truthy() {
			el.Set("value", "")
		}
		c.clearRealError()
		c.realError = clip("real run ("+names+"): "+msg, maxShownError)
		c.Error = c.realError
	})
}

// drawReal hands the measured CDFs and the predicting report to the
// overlay plots (nulls: clear them).
func (c *Root) drawReal(cdf, report js.Value) {
	if x := js.Global().Get("dynosimExplain"); x.Truthy() {
		x.Call("setReal", cdf, report)
	}
}

// RealStatus is the line beside the file input.
func (c *Root) RealStatus() string {
	switch {
	case c.RealBusy:
		return "Comparing " + c.realNames + "…"
	case c.Real != nil:
		return "Loaded " + c.realNames + "."
	}
	return ""
}

// UseRealTrace makes the real run's requests the trace (what dynosim
// convert-trace writes), so the next run replays the benchmark's workload
// and the comparison holds like against like.
func (c *Root) UseRealTrace() {
	if c.realTrace == "" {
		return
	}
	name := strings.TrimSuffix(strings.TrimSuffix(strings.Split(c.realNames, ", ")[0], ".json"), ".jsonl") + "-trace.jsonl"
	opts := js.Global().Get("Object").New()
	opts.Set("type", "application/jsonl")
	c.TraceFile = js.Global().Get("File").New([]any{c.realTrace}, name, opts)
	c.TraceName, c.Sample, c.Error = name, "", ""
	c.Notice = fmt.Sprintf("The trace is now the real run's %d requests (%s): press Run to replay them.", strings.Count(c.realTrace, "\n"), name)
	if c.realNote != "" {
		c.Notice += " Note: " + c.realNote + "."
	}
}

// HasRealFiles reports whether a real run is loaded.
func (c *Root) HasRealFiles() bool { return c.realFiles.Truthy() }

// jsNum is v as a number (NaN when it is not one: JSON null).
func jsNum(v js.Value) float64 {
	if v.Type() != js.TypeNumber {
		return math.NaN()
	}
	return v.Float()
}
