package main

import (
	"fmt"
	"strconv"

	"github.com/dynosim/dynosim-web/core/report/schema"
	"github.com/vugu/vugu"
	"github.com/vugu/vugu/js"
)

// This file: the page's explanations of a prediction. The TTFT breakdown of
// the shown run (and of the selected request), and a request's life on
// demand: selecting a request replays the shown run's exact inputs with
// watch set (the simulator is deterministic, so it is the same run) and
// shows the events the core recorded for that request. The charts are drawn
// by public/explain.js.

// explainState is the explanation part of Root's state.
type explainState struct {
	AggBar     *BreakdownBar // the shown run's mean TTFT by part (nil: none)
	ReqBar     *BreakdownBar // the selected request's (nil: none selected, or no first token)
	Legend     []LegendRow
	ReqBarNote string // why the selected request has no bar
	// the TTFT's own p50 and p99 for the sum row (a sum of the parts'
	// percentiles would be no percentile)
	TTFTP50, TTFTP99 string

	Selected    uint64 // the selected request's uuid (0: none)
	ReqIDText   string // the "Request id" box
	Watch       *TimelineView
	WatchBusy   bool
	WatchStatus string
	WatchError  string
	OpenRun     int // the opened run of passes (a row index of Watch.Rows), -1: none
	RunPage     int
	watchSeq    int
	explainRun  *RunEntry // the run the selection belongs to
	scrollWatch bool      // bring the timeline into view after the next render

	realState
}

// showExplain derives the breakdown of the shown run r (nil: none). A
// different run drops the selection: its timeline was of another run.
func (c *Root) showExplain(r *RunEntry) {
	if r != c.explainRun {
		c.explainRun = r
		c.watchSeq++ // a replay still going belongs to the old run
		c.Selected, c.Watch, c.WatchBusy, c.WatchStatus, c.WatchError, c.OpenRun = 0, nil, false, "", "", -1
		c.drawTimeline(js.Null())
		c.compareReal()
	}
	c.AggBar, c.ReqBar, c.Legend, c.ReqBarNote = nil, nil, nil, ""
	if r == nil {
		return
	}
	c.AggBar = aggregateBar(r.Parsed.Breakdown)
	c.TTFTP50, c.TTFTP99 = fmtMs(num(r.Parsed.Summary, schema.TTFT.Key(schema.Median))), fmtMs(num(r.Parsed.Summary, schema.TTFT.Key(schema.P99)))
	c.setRequestBar(r, nil)
}

// setRequestBar puts the selected request's breakdown beside the mean:
// from the run's per-request records, or else from replayed (the records
// captured by the replay of a run that kept none).
func (c *Root) setRequestBar(r *RunEntry, replayed map[string]map[string]float64) {
	c.ReqBar, c.ReqBarNote = nil, ""
	if c.Selected != 0 {
		src := replayed
		if r.Req != nil {
			src = r.Req.Breakdown
		}
		parts, known := src[strconv.FormatUint(c.Selected, 10)]
		switch {
		case parts != nil:
			c.ReqBar = requestBar(c.Selected, parts)
		case known:
			c.ReqBarNote = fmt.Sprintf("Request %d has no first token (rejected or unfinished): it has no TTFT to break down.", c.Selected)
		}
	}
	if c.AggBar != nil {
		c.Legend = legendRows(r.Parsed.Breakdown, c.AggBar, c.ReqBar)
	}
}

// BreakdownBars are the bars shown: the mean, then the selected request.
func (c *Root) BreakdownBars() []*BreakdownBar {
	if c.ReqBar == nil {
		return []*BreakdownBar{c.AggBar}
	}
	return []*BreakdownBar{c.AggBar, c.ReqBar}
}

// SelectRow selects the request of a row of the Requests table.
func (c *Root) SelectRow(row []string) {
	if c.Requests != nil {
		c.SelectRequest(c.Requests.UUID(row))
	}
}

// IsSelected reports whether a row of the Requests table is the selected request.
func (c *Root) IsSelected(row []string) bool {
	return c.Selected != 0 && c.Requests != nil && c.Requests.UUID(row) == strconv.FormatUint(c.Selected, 10)
}

// OnRequestID keeps the "Request id" box's text; Enter shows the request.
func (c *Root) OnRequestID(event vugu.DOMEvent) {
	c.ReqIDText = event.PropString("target", "value")
}

// OnRequestIDKey shows the typed request on Enter.
func (c *Root) OnRequestIDKey(event vugu.DOMEvent) {
	if e := event.JSEvent(); e.Truthy() && jsString(e.Get("key")) == "Enter" {
		event.PreventDefault()
		c.ReqIDText = jsString(event.JSEventTarget().Get("value"))
		c.SelectRequest(c.ReqIDText)
	}
}

// ShowRequestID shows the request typed in the box.
func (c *Root) ShowRequestID() {
	if el := js.Global().Get("document").Call("getElementById", "request-id"); el.Truthy() {
		c.ReqIDText = el.Get("value").String()
	}
	c.SelectRequest(c.ReqIDText)
}

// SelectRequest selects request id of the shown run and replays the run to
// record its life.
func (c *Root) SelectRequest(id string) {
	uuid, err := parseUUID(id)
	r := c.current()
	switch {
	case err != nil:
		c.WatchError = err.Error()
		return
	case r == nil || !r.opts.Truthy():
		c.WatchError = "run a prediction first: a request's life comes from replaying the shown run"
		return
	}
	if t := r.Req; t != nil && t.UUIDCol >= 0 && !t.HasUUID(strconv.FormatUint(uuid, 10)) {
		c.WatchError = fmt.Sprintf("request %d is not in this run (%s)", uuid, t.UUIDRange())
		return
	}
	c.WatchError = ""
	c.Selected, c.ReqIDText = uuid, strconv.FormatUint(uuid, 10)
	c.setRequestBar(r, nil)
	c.Watch, c.OpenRun, c.RunPage = nil, -1, 0
	c.drawTimeline(js.Null())
	c.watchSeq++
	seq := c.watchSeq
	c.WatchBusy = true
	c.WatchStatus = fmt.Sprintf("Replaying the run to record request %d…", uuid)

	opts := js.Global().Get("Object").Call("assign", js.Global().Get("Object").New(), r.opts)
	opts.Set("watch", float64(uuid))
	// the run's own records give the request's breakdown; without them
	// (a service run) the replay captures them
	opts.Set("capturePerRequest", r.Req == nil)
	progress := c.funcOf(func(args []js.Value) {
		if seq != c.watchSeq {
			return
		}
		p := arg0(args)
		if done, total := p.Get("done").Int(), p.Get("total").Int(); total > 0 {
			c.WatchStatus = fmt.Sprintf("Replaying the run to record request %d… %d %%", uuid, min(99, done*100/total))
		}
	})
	c.then(dynosim().Call("runRaw", opts, progress), func(res js.Value) {
		progress.Release()
		if seq != c.watchSeq {
			return
		}
		c.WatchBusy, c.WatchStatus = false, ""
		parsed, err := parseReport([]byte(res.Get("json").String()))
		if err != nil {
			c.WatchError = "the replay's report: " + err.Error()
			return
		}
		c.Watch = timelineView(uuid, parsed.Timeline)
		if r.Req == nil {
			if t, err := parseRequests([]byte(jsString(res.Get("requests")))); err == nil {
				c.setRequestBar(r, t.Breakdown)
			}
		}
		if c.Watch.Found {
			c.drawTimeline(res.Get("report").Get(schema.SectionTimeline))
		}
		c.scrollWatch = true
	}, func(msg string) {
		progress.Release()
		if seq != c.watchSeq {
			return
		}
		c.WatchBusy, c.WatchStatus = false, ""
		if msg == "canceled" {
			c.WatchStatus = "Canceled."
			return
		}
		c.WatchError = msg
	})
}

// CancelWatch stops the replay of a request's life (Run's Cancel covers a
// replay queued behind a run).
func (c *Root) CancelWatch() {
	if !c.WatchBusy || c.Running {
		return
	}
	c.watchSeq++
	c.WatchBusy, c.WatchStatus = false, "Canceled."
	dynosim().Call("cancel")
}

// drawTimeline hands the watched request's events to the lane chart
// (null: clear it).
func (c *Root) drawTimeline(tl js.Value) {
	if x := js.Global().Get("dynosimExplain"); x.Truthy() {
		x.Call("setTimeline", tl)
	}
}

// ToggleRun opens or closes a folded run of passes.
func (c *Root) ToggleRun(i int) {
	if c.OpenRun == i {
		c.OpenRun = -1
	} else {
		c.OpenRun, c.RunPage = i, 0
	}
}

// RunPageBy moves the opened run by delta pages.
func (c *Root) RunPageBy(delta int) {
	if c.Watch == nil || c.OpenRun < 0 || c.OpenRun >= len(c.Watch.Rows) {
		return
	}
	c.RunPage = max(0, min(c.RunPage+delta, runPages(c.Watch.Rows[c.OpenRun].N)-1))
}

// OpenPasses are the shown passes of the opened run.
func (c *Root) OpenPasses(i int) []PassRow {
	if c.Watch == nil || i != c.OpenRun {
		return nil
	}
	row := c.Watch.Rows[i]
	return c.Watch.PassesPage(row.First, row.N, c.RunPage)
}

// RunPageText is "passes 51–100 of 812".
func (c *Root) RunPageText(i int) string {
	if c.Watch == nil || i < 0 || i >= len(c.Watch.Rows) {
		return ""
	}
	n := c.Watch.Rows[i].N
	lo := c.RunPage*passPage + 1
	return fmt.Sprintf("passes %d–%d of %d", lo, min(lo+passPage-1, n), n)
}

// syncExplain runs after each render: the charts are put back into their
// containers, and a new timeline is brought into view.
func (c *Root) syncExplain(doc js.Value) {
	if x := js.Global().Get("dynosimExplain"); x.Truthy() {
		x.Call("remount")
	}
	// the box shows the selected id (Vugu would set only the attribute,
	// which an edited input no longer shows); never under the user's typing
	if el := doc.Call("getElementById", "request-id"); el.Truthy() && !js.Global().Get("Object").Call("is", el, doc.Get("activeElement")).Bool() &&
		el.Get("value").String() != c.ReqIDText {
		el.Set("value", c.ReqIDText)
	}
	if c.scrollWatch {
		c.scrollWatch = false
		if el := doc.Call("getElementById", "request-timeline"); el.Truthy() {
			o := js.Global().Get("Object").New()
			o.Set("block", "nearest")
			el.Call("scrollIntoView", o)
		}
	}
}
