package main

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/dynosim/dynosim-web/core/report/metrics"
	"github.com/dynosim/dynosim-web/core/report/schema"
)

// This file: a watched request's life (report.request_timeline) as list
// rows. A long request is in thousands of engine passes: consecutive
// passes of one kind on one worker fold into one row that opens, a page of
// passes at a time, so the page never renders thousands of rows (the chart,
// public/explain.js, draws every pass). Pure Go, tested natively.

// requestTimeline is the report's request_timeline. Events are kept as
// decoded JSON objects read by their schema keys: their fields depend on
// the event, and an event a newer core adds is still listed.
type requestTimeline struct {
	UUID   uint64
	Events []tlEvent
}

// UnmarshalJSON reads the section by its schema keys.
func (tl *requestTimeline) UnmarshalJSON(b []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	*tl = requestTimeline{}
	if err := json.Unmarshal(m[schema.TimelineUUID], &tl.UUID); err != nil && m[schema.TimelineUUID] != nil {
		return fmt.Errorf("%s: %w", schema.TimelineUUID, err)
	}
	if err := json.Unmarshal(m[schema.TimelineEvents], &tl.Events); err != nil && m[schema.TimelineEvents] != nil {
		return fmt.Errorf("%s: %w", schema.TimelineEvents, err)
	}
	return nil
}

type tlEvent map[string]any

func (e tlEvent) str(k string) string {
	s, _ := e[k].(string)
	return s
}

// num is the event's number k, NaN when absent.
func (e tlEvent) num(k string) float64 {
	if v, ok := e[k].(float64); ok {
		return v
	}
	return math.NaN()
}

func (e tlEvent) has(k string) bool { _, ok := e[k].(float64); return ok }

// zero is the event's count k: the core leaves a zero count out.
func (e tlEvent) zero(k string) float64 {
	if v, ok := e[k].(float64); ok {
		return v
	}
	return 0
}

// TimelineRow is one row of the list: an event, or a run of passes.
type TimelineRow struct {
	Kind  string // CSS class and test hook: the event name, or "passes" for a run
	Time  string // since arrival
	Label string
	Text  string
	First int // a run of passes: its first pass in TimelineView.passes
	N     int // … and how many (0: not a run)
}

// PassRow is one engine pass, formatted.
type PassRow struct {
	N                                     int // 1-based, over all the request's passes
	Start, End, Pass, Batch, Tokens, Kind string
	Prefill, Decode                       string
}

// TimelineView is what the page shows of a watched request.
type TimelineView struct {
	UUID  uint64
	Head  string
	Rows  []TimelineRow
	Found bool

	// every pass, formatted only when its page is opened (a long request
	// is in thousands)
	passes []passRef
	t0     float64
}

type passRef struct {
	e    tlEvent
	kind string
}

// minRun is the shortest run of like passes folded into one row.
const minRun = 4

// passPage is how many passes an opened run shows at once.
const passPage = 50

// timelineView builds the list of a watched request's life.
func timelineView(uuid uint64, tl *requestTimeline) *TimelineView {
	v := &TimelineView{UUID: uuid}
	if tl == nil || len(tl.Events) == 0 {
		v.Head = fmt.Sprintf("Request %d is not in this run: it has no events. Pick an id from the Requests table.", uuid)
		return v
	}
	v.Found = true
	t0 := arrivalMs(tl.Events)
	v.t0 = t0
	since := func(t float64) string {
		if math.IsNaN(t) {
			return ""
		}
		return "+" + fmtT(t-t0)
	}
	firstToken := false
	stats := tlStats{ttft: math.NaN(), end: math.NaN()}
	evs := tl.Events
	for i := 0; i < len(evs); i++ {
		e := evs[i]
		name := e.str(schema.TimelineEvent)
		if name == schema.EventPass {
			kind := passKind(e, firstToken)
			j := i
			for j+1 < len(evs) && evs[j+1].str(schema.TimelineEvent) == schema.EventPass && passKind(evs[j+1], firstToken) == kind && evs[j+1].num(schema.TimelineWorker) == e.num(schema.TimelineWorker) {
				j++
			}
			first := len(v.passes)
			for k := i; k <= j; k++ {
				v.passes = append(v.passes, passRef{evs[k], kind})
			}
			stats.passes += j - i + 1
			if kind == "Prefill pass" {
				stats.prefill += j - i + 1
			}
			if j-i+1 >= minRun {
				v.Rows = append(v.Rows, passRun(evs[i:j+1], kind, since, first))
			} else {
				for k := i; k <= j; k++ {
					v.Rows = append(v.Rows, TimelineRow{Kind: schema.EventPass, Time: since(evs[k].num(schema.TimelineTMs)), Label: kind, Text: passText(evs[k])})
				}
			}
			i = j
			continue
		}
		row := TimelineRow{Kind: name, Time: since(e.num(schema.TimelineTMs))}
		row.Label, row.Text = eventText(e, t0)
		switch name {
		case schema.EventRouted:
			stats.worker = workerName(e)
		case schema.EventFirstToken:
			firstToken = true
			stats.ttft = e.num(schema.TimelineTMs) - t0
		case schema.EventPreempted:
			stats.preempt++
		case schema.EventCompleted, schema.EventRejected:
			stats.status, stats.end = name, e.num(schema.TimelineTMs)-t0
		}
		v.Rows = append(v.Rows, row)
	}
	v.Head = stats.head(uuid, evs)
	return v
}

// arrivalMs is the time of the arrival event (the first event's without
// one): the origin of the view's times.
func arrivalMs(evs []tlEvent) float64 {
	for _, e := range evs {
		if e.str(schema.TimelineEvent) == schema.EventArrival {
			return e.num(schema.TimelineTMs)
		}
	}
	return evs[0].num(schema.TimelineTMs)
}

// tlStats sums a watched request's life for the view's headline.
type tlStats struct {
	passes, prefill, preempt int
	worker                   string
	ttft, end                float64 // since arrival; NaN: none
	status                   string  // the terminal event's kind, "" if none
}

// head is the headline of request uuid's view: its prompt and output,
// first token, outcome, worker, passes and preemptions.
func (stats *tlStats) head(uuid uint64, evs []tlEvent) string {
	head := fmt.Sprintf("Request %d", uuid)
	if a := evs[0]; a.str(schema.TimelineEvent) == schema.EventArrival {
		head += fmt.Sprintf(": %s-token prompt, %s output tokens", count(a.num(schema.TimelineInputLength)), count(a.num(schema.TimelineOutputLength)))
	}
	var parts []string
	if !math.IsNaN(stats.ttft) {
		parts = append(parts, "first token after "+fmtMs(stats.ttft))
	}
	switch stats.status {
	case schema.EventCompleted:
		parts = append(parts, "completed after "+fmtMs(stats.end))
	case schema.EventRejected:
		parts = append(parts, "rejected after "+fmtMs(stats.end))
	default:
		parts = append(parts, "unfinished when the run ended")
	}
	if stats.worker != "" {
		parts = append(parts, "on "+stats.worker)
	}
	p := fmt.Sprintf("in %s engine pass%s", metrics.Format(float64(stats.passes)), map[bool]string{true: "", false: "es"}[stats.passes == 1])
	if stats.prefill > 0 {
		p += fmt.Sprintf(" (%d prefill)", stats.prefill)
	}
	parts = append(parts, p)
	if stats.preempt > 0 {
		parts = append(parts, fmt.Sprintf("preempted %d×", stats.preempt))
	}
	return head + "; " + strings.Join(parts, ", ") + "."
}

// passKind names a pass by what it did for the request: computed prompt
// only (no token), emitted the first token, or decoded.
func passKind(e tlEvent, afterFirst bool) string {
	switch {
	case e.str(schema.TimelinePool) == "prefill":
		// (a disaggregated prefill worker's last chunk emits a token the
		// decode side computes again; the first token is the decode side's)
		return "Prefill pass"
	case e.zero(schema.TimelineTokens) > 0 && afterFirst:
		return "Decode pass"
	case e.zero(schema.TimelineTokens) > 0:
		return "First-token pass"
	}
	return "Prefill pass"
}

func passRow(n int, e tlEvent, kind string, since func(float64) string) PassRow {
	return PassRow{N: n, Kind: kind, Start: since(e.num(schema.TimelineTMs)), End: since(e.num(schema.TimelineEndMs)), Pass: fmtMs(e.num(schema.TimelinePassMs)),
		Batch: count(e.zero(schema.TimelineBatchRequests)), Prefill: count(e.zero(schema.TimelinePrefillTokens)), Decode: count(e.zero(schema.TimelineDecodeTokens)),
		Tokens: count(e.zero(schema.TimelineTokens))}
}

// passText describes one pass.
func passText(e tlEvent) string {
	return fmt.Sprintf("%s on worker %s, %s in the batch (%s prefill + %s decode tokens), emitted %s",
		fmtMs(e.num(schema.TimelinePassMs)), count(e.num(schema.TimelineWorker)), requests(e.zero(schema.TimelineBatchRequests)), count(e.zero(schema.TimelinePrefillTokens)),
		count(e.zero(schema.TimelineDecodeTokens)), tokens(e.zero(schema.TimelineTokens)))
}

// passRun folds a run of like passes into one row with their ranges.
func passRun(run []tlEvent, kind string, since func(float64) string, first int) TimelineRow {
	var batch, pass, emitted rangeStat
	for _, e := range run {
		batch.add(e.zero(schema.TimelineBatchRequests))
		pass.add(e.num(schema.TimelinePassMs))
		emitted.add(e.zero(schema.TimelineTokens))
	}
	last := run[len(run)-1]
	end := last.num(schema.TimelineEndMs)
	if math.IsNaN(end) {
		end = last.num(schema.TimelineTMs)
	}
	text := fmt.Sprintf("%s passes on worker %s until %s: emitted %s; batch %s requests (mean %.1f); pass time %s–%s (mean %s)",
		metrics.Format(float64(len(run))), count(run[0].num(schema.TimelineWorker)), since(end), tokens(emitted.sum),
		intRange(batch), batch.mean(), fmtMs(pass.lo), fmtMs(pass.hi), fmtMs(pass.mean()))
	return TimelineRow{Kind: "passes", Time: since(run[0].num(schema.TimelineTMs)), Label: kind + "es", Text: text, First: first, N: len(run)}
}

type rangeStat struct {
	lo, hi, sum float64
	n           int
}

func (r *rangeStat) add(v float64) {
	if math.IsNaN(v) {
		return
	}
	if r.n == 0 || v < r.lo {
		r.lo = v
	}
	if r.n == 0 || v > r.hi {
		r.hi = v
	}
	r.sum += v
	r.n++
}

func (r *rangeStat) mean() float64 {
	if r.n == 0 {
		return math.NaN()
	}
	return r.sum / float64(r.n)
}

func intRange(r rangeStat) string {
	if r.lo == r.hi {
		return count(r.lo)
	}
	return count(r.lo) + "–" + count(r.hi)
}

// eventText is an event's label and details (all fields but the time).
func eventText(e tlEvent, t0 float64) (string, string) {
	var d []string
	add := func(format string, k string) {
		if e.has(k) {
			d = append(d, fmt.Sprintf(format, count(e.num(k))))
		}
	}
	switch e.str(schema.TimelineEvent) {
	case schema.EventArrival:
		add("%s prompt tokens", schema.TimelineInputLength)
		add("%s output tokens requested", schema.TimelineOutputLength)
		return "Arrival", strings.Join(d, ", ")
	case schema.EventRouted:
		s := "to " + workerName(e)
		if e.has(schema.TimelineOverlapTokens) {
			s += ", the router saw " + count(e.num(schema.TimelineOverlapTokens)) + " of its prompt tokens cached there"
		}
		return "Routed", s
	case schema.EventAdmitted:
		if e.has(schema.TimelineWorker) {
			d = append(d, "by "+workerName(e))
		}
		if e.has(schema.TimelineReusedTokens) {
			d = append(d, count(e.num(schema.TimelineReusedTokens))+" prompt tokens reused from the prefix cache")
		}
		return "Admitted", strings.Join(d, ", ")
	case schema.EventParked:
		return "Parked", "its cached prefix comes back from the lower KV tiers (G2/G3/G4) into G1 slots reserved for it; it is admitted when the blocks arrive"
	case schema.EventPrefillDone:
		s := "the prompt is computed"
		if e.has(schema.TimelineWorker) {
			s += " on " + workerName(e)
		}
		return "Prefill done", s + "; its KV cache waits to move to the decode side"
	case schema.EventFirstToken:
		return "First token", "TTFT " + fmtMs(e.num(schema.TimelineTMs)-t0)
	case schema.EventPreempted:
		s := "its KV cache is freed and its work so far is lost; it waits to be admitted again"
		if e.has(schema.TimelineWorker) {
			s = "on " + workerName(e) + ": " + s
		}
		return "Preempted", s
	case schema.EventKVTransfer:
		s := fmtMs(e.num(schema.TimelineEndMs) - e.num(schema.TimelineTMs))
		if e.has(schema.TimelineTokens) {
			s += " for " + count(e.num(schema.TimelineTokens)) + " tokens"
		}
		if e.has(schema.TimelineBytes) {
			s += " (" + decimalBytes(e.num(schema.TimelineBytes)) + ")"
		}
		return "KV transfer", s
	case schema.EventCompleted:
		s := "E2E " + fmtMs(e.num(schema.TimelineTMs)-t0)
		if e.has(schema.TimelineOutputLength) {
			s = count(e.num(schema.TimelineOutputLength)) + " output tokens, " + s
		}
		return "Completed", s
	case schema.EventRejected:
		return "Rejected", strings.ReplaceAll(e.str(schema.TimelineReason), "_", " ")
	}
	// an event this page does not know: its fields as they are
	keys := make([]string, 0, len(e))
	for k := range e {
		if k != schema.TimelineEvent && k != schema.TimelineTMs {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		d = append(d, k+" "+fmt.Sprint(e[k]))
	}
	return strings.ReplaceAll(e.str(schema.TimelineEvent), "_", " "), strings.Join(d, ", ")
}

// workerName is "aggregated worker 0 (DP rank 1)".
func workerName(e tlEvent) string {
	s := "worker " + count(e.num(schema.TimelineWorker))
	if p := e.str(schema.TimelinePool); p != "" {
		s = p + " " + s
	}
	if e.has(schema.TimelineDPRank) && e.num(schema.TimelineDPRank) > 0 {
		s += " (DP rank " + count(e.num(schema.TimelineDPRank)) + ")"
	}
	return s
}

// count prints a whole number ("—" when absent).
func count(v float64) string {
	if math.IsNaN(v) {
		return "—"
	}
	return metrics.Format(v)
}

// decimalBytes prints a size in decimal units, as the topology's KV link.
func decimalBytes(b float64) string {
	switch {
	case b >= 1e12:
		return strconv.FormatFloat(b/1e12, 'f', 2, 64) + " TB"
	case b >= 1e9:
		return strconv.FormatFloat(b/1e9, 'f', 2, 64) + " GB"
	case b >= 1e6:
		return strconv.FormatFloat(b/1e6, 'f', 1, 64) + " MB"
	case b >= 1e3:
		return strconv.FormatFloat(b/1e3, 'f', 1, 64) + " kB"
	}
	return strconv.FormatFloat(b, 'f', 0, 64) + " B"
}

func requests(v float64) string {
	if v == 1 {
		return "1 request"
	}
	return count(v) + " requests"
}

// fmtT prints a time since arrival: fmtMs without the human duration.
func fmtT(v float64) string {
	if math.Abs(v) >= 1000 && !math.IsInf(v, 0) {
		return metrics.Format(math.Round(v)) + " ms"
	}
	return fmtMs(v)
}

func tokens(v float64) string {
	if v == 1 {
		return "1 token"
	}
	return count(v) + " tokens"
}

// PassesPage is page p of the run of n passes from first.
func (v *TimelineView) PassesPage(first, n, p int) []PassRow {
	lo := min(first+p*passPage, first+n)
	hi := min(lo+passPage, first+n)
	if lo < 0 || hi > len(v.passes) {
		return nil
	}
	since := func(t float64) string { return "+" + fmtT(t-v.t0) }
	out := make([]PassRow, 0, hi-lo)
	for k := lo; k < hi; k++ {
		out = append(out, passRow(k+1, v.passes[k].e, v.passes[k].kind, since))
	}
	return out
}

// runPages is the number of pages of a run of n passes.
func runPages(n int) int { return max(1, (n+passPage-1)/passPage) }

// parseUUID reads a request id typed by the user.
func parseUUID(s string) (uint64, error) {
	s = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(s), "#"))
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("request id %q: enter a whole number ≥ 1 (the uuid column of the Requests table)", s)
	}
	return n, nil
}
