package main

import (
	"fmt"
	"strings"

	"github.com/vugu/vugu"
	"github.com/vugu/vugu/js"
)

// This file: the results of the current run and the compare list (show,
// stale state, plots), and the result actions (downloads, share, the
// per-request table's sorting and paging).

// defaultSample is the sample the page starts with: the conversation
// trace's first 1,000 requests, byte for byte the CLI's embedded
// cmd/dynosim/sample.jsonl, so the page's default run is `dynosim predict`'s.
const defaultSample = "default"

// defaultSampleBytes is the length of cmd/dynosim/sample.jsonl, a prefix of
// the conversation trace (TestDefaultSampleIsCLISample checks it).
const defaultSampleBytes = 251546

// current is the run whose results are shown (the latest), nil before any.
func (c *Root) current() *RunEntry {
	if len(c.Runs) == 0 {
		return nil
	}
	return c.Runs[len(c.Runs)-1]
}

// show derives the shown results from the current run and its baseline.
func (c *Root) show() {
	r := c.current()
	c.HasReport = r != nil
	if r == nil {
		c.Base, c.KPIs, c.Groups, c.Speed, c.Requests, c.Table, c.RunURL, c.Planner, c.Tiers = nil, nil, nil, nil, nil, "", "", nil, nil
		c.Verdict = nil
		c.drawLatency(nil)
		c.tableGen++
		c.showExplain(nil)
		c.drawPlanner(nil)
		c.drawTiers(nil)
		c.pushCharts()
		return
	}
	c.Base = nil
	var base map[string]float64
	if i := baselineIndex(c.Runs, c.BaselineID); i >= 0 {
		c.Base = c.Runs[i]
		base = c.Base.Parsed.Summary
	}
	p := r.Parsed
	sum := p.Summary
	c.KPIs = kpis(p)
	c.Verdict = verdictView(p.Verdict)
	c.drawLatency(r)
	t, rows, lines := aiperfTable(sum)
	c.AIPerfTitle, c.AIPerfCols, c.AIPerf, c.AIPerfLines = t.Title, t.Columns, rows, lines
	c.Mode, c.Model = p.Deployment.Mode, p.Deployment.Model
	c.Groups, c.Speed = summaryGroups(sum, base, p.Deployment.Mode)
	c.Badge, c.Memory, c.Warnings = badgePools(p.Deployment), memoryLines(p.Deployment), p.Warnings
	c.Balance, c.Overlap = routerRows(p.Workers, sum)
	c.Table, c.RunURL, c.Requests = r.Table, r.RunURL, r.Req
	c.tableGen++
	c.showExplain(r)
	c.Planner = plannerView(p.Planner)
	c.drawPlanner(r)
	c.Tiers = tiersView(p.KVTiers)
	c.drawTiers(r)
	c.pushCharts()
}

// drawPlanner hands the shown run's planner section and its decisions to
// the planner plots (public/planner.js); nil, or a run without a planner,
// clears them. The plots are redrawn only when the shown run changes.
func (c *Root) drawPlanner(r *RunEntry) {
	pl := js.Global().Get("dynosimPlanner")
	if !pl.Truthy() || (r == c.plannerRun && r != nil) {
		return
	}
	c.plannerRun = r
	if r == nil || c.Planner == nil {
		pl.Call("set", js.Null(), "[]")
		return
	}
	pl.Call("set", r.report, markersJSON(c.Planner.Decisions))
}

// drawLatency hands the shown run's report to the latency-over-time plot
// (public/latency.js); nil clears it. The plot is redrawn only when the
// shown run changes.
func (c *Root) drawLatency(r *RunEntry) {
	l := js.Global().Get("dynosimLatency")
	if !l.Truthy() || (r == c.latencyRun && r != nil) {
		return
	}
	c.latencyRun = r
	if r == nil {
		l.Call("set", js.Null())
		return
	}
	l.Call("set", r.report)
}

// drawTiers hands the shown run's report to the KV tier plots
// (public/tiers.js); nil, or a run without kv_tiers, clears them. The plots
// are redrawn only when the shown run changes.
func (c *Root) drawTiers(r *RunEntry) {
	t := js.Global().Get("dynosimTiers")
	if !t.Truthy() || (r == c.tiersRun && r != nil) {
		return
	}
	c.tiersRun = r
	if r == nil || c.Tiers == nil {
		t.Call("set", js.Null())
		return
	}
	t.Call("set", r.report)
}

// pushCharts hands the runs to the plots: the current run first, the
// others newest first (dynosimCharts.setRuns), or the current run alone to
// render() where setRuns does not exist.
func (c *Root) pushCharts() {
	charts := js.Global().Get("dynosimCharts")
	if !charts.Truthy() {
		return
	}
	if charts.Get("setRuns").Type() == js.TypeFunction {
		list := js.Global().Get("Array").New()
		for i := len(c.Runs) - 1; i >= 0; i-- {
			o := js.Global().Get("Object").New()
			o.Set("name", c.Runs[i].Name)
			setJS(o, "report", c.Runs[i].report)
			list.Call("push", o)
		}
		charts.Call("setRuns", list)
		return
	}
	if r := c.current(); r != nil {
		charts.Call("render", r.report)
	}
}

// BaseHead heads the baseline column: "Previous run" or the chosen run.
func (c *Root) BaseHead() string {
	if c.Base == nil {
		return ""
	}
	if c.BaselineID == 0 || c.Base == c.Runs[len(c.Runs)-2] {
		return "Previous run"
	}
	return "Baseline: " + c.Base.Name
}

// OnBaseline picks the run the current one is compared with.
func (c *Root) OnBaseline(event vugu.DOMEvent) {
	var id int
	fmt.Sscan(event.PropString("target", "value"), &id)
	c.BaselineID = id
	c.show()
}

// RenameRun sets a run's name from its input.
func (c *Root) RenameRun(id int, event vugu.DOMEvent) {
	name := strings.TrimSpace(event.PropString("target", "value"))
	for _, r := range c.Runs {
		if r.ID == id && name != "" {
			r.Name = name
		}
	}
	c.pushCharts()
}

// RemoveRun drops a run from the compare list; removing the current run
// shows the one before it.
func (c *Root) RemoveRun(id int) {
	for i, r := range c.Runs {
		if r.ID == id {
			c.Runs = append(c.Runs[:i:i], c.Runs[i+1:]...)
			break
		}
	}
	if c.BaselineID == id {
		c.BaselineID = 0
	}
	c.show()
}

// IsCurrent reports whether r is the shown run.
func (c *Root) IsCurrent(r *RunEntry) bool { return r == c.current() }

// inputKey identifies the inputs Run would use now.
func (c *Root) inputKey() string {
	return c.Config + "\x00" + c.TraceLabel() + "\x00" + c.ProfileName
}

// IsStale reports whether the shown results no longer answer the inputs:
// the last run failed, or the config, trace or profile changed since.
func (c *Root) IsStale() bool {
	r := c.current()
	return r != nil && (c.failed || r.key != c.inputKey())
}

// StaleReason is the stale banner's text.
func (c *Root) StaleReason() string {
	if c.failed {
		return "These results are from an earlier run (" + c.current().Name + "): the last run failed. Fix the error and run again to update them."
	}
	return "These results are from an earlier run (" + c.current().Name + "): the config, trace or profile has changed since. Run again to update them."
}

// DownloadReport saves the report JSON.
func (c *Root) DownloadReport() {
	if r := c.current(); r != nil {
		dynosim().Call("download", "prediction.json", r.JSON, "application/json")
	}
}

// DownloadCSV saves the per-request records as CSV.
func (c *Root) DownloadCSV() {
	if c.Requests != nil {
		dynosim().Call("download", "requests.csv", c.Requests.CSV(), "text/csv")
	}
}

// Share puts the config and sample choice in the URL fragment and copies
// the link. Uploaded traces are never included.
func (c *Root) Share() {
	frag := shareFragment(c.Config, c.Sample)
	if len(frag) > maxShareFragment {
		c.Error = fmt.Sprintf("this config is too large for a share link (%s in the link; the limit is %s): share the file instead", humanBytes(float64(len(frag))), humanBytes(maxShareFragment))
		return
	}
	loc := js.Global().Get("location")
	js.Global().Get("history").Call("replaceState", js.Null(), "", frag)
	link := loc.Get("href").String()
	c.Notice = "Link copied: the URL now holds this config" + map[bool]string{true: " and sample", false: " (uploaded traces are not shared)"}[c.Sample != ""] + "."
	if cb := js.Global().Get("navigator").Get("clipboard"); cb.Truthy() {
		p := cb.Call("writeText", link)
		p.Call("catch", js.FuncOf(func(js.Value, []js.Value) any { return nil }))
	}
}

// SortBy sorts the per-request table by column i.
func (c *Root) SortBy(i int) {
	if c.Requests != nil {
		c.Requests.Sort(i)
	}
}

// PageBy moves the per-request table by delta pages.
func (c *Root) PageBy(delta int) {
	if c.Requests != nil {
		c.Requests.SetPage(c.Requests.Page + delta)
	}
}

// SortMark is the arrow shown on the sorted column.
func (c *Root) SortMark(i int) string {
	if c.Requests == nil || c.Requests.SortCol != i {
		return ""
	}
	if c.Requests.SortAsc {
		return " ▲"
	}
	return " ▼"
}

// AriaSort is the aria-sort value of column i.
func (c *Root) AriaSort(i int) string {
	if c.Requests == nil || c.Requests.SortCol != i {
		return "none"
	}
	if c.Requests.SortAsc {
		return "ascending"
	}
	return "descending"
}

// BaseName is the baseline run's name.
func (c *Root) BaseName() string {
	if c.Base == nil {
		return ""
	}
	return c.Base.Name
}

// syncRunNames puts each run's name in its input's value property after a
// render: Vugu sets only the attribute, and a reused input (after a removal)
// would keep the text typed into another run's input.
func (c *Root) syncRunNames(doc js.Value) {
	if len(c.Runs) == 0 {
		return
	}
	names := map[string]string{}
	for _, r := range c.Runs {
		names[fmt.Sprint(r.ID)] = r.Name
	}
	els := doc.Call("querySelectorAll", "input.runname")
	active := doc.Get("activeElement")
	for i := 0; i < els.Length(); i++ {
		el := els.Index(i)
		if name, ok := names[jsString(el.Call("getAttribute", "data-run"))]; ok && !js.Global().Get("Object").Call("is", el, active).Bool() && el.Get("value").String() != name {
			el.Set("value", name)
		}
	}
}
