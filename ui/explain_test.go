package main

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/core/report/metrics"
	"github.com/dynosim/dynosim-web/core/report/schema"
)

const breakdownJSON = `{"summary": {}, "ttft_breakdown": {"requests": 987, "mean_ttft_ms": 123.4, "parts": [
 {"part": "frontend", "mean_ms": 7.5, "p50_ms": 7.5, "p99_ms": 7.5},
 {"part": "router_queue", "mean_ms": 0, "p50_ms": 0, "p99_ms": 0},
 {"part": "engine_queue", "mean_ms": 20.9, "p50_ms": 2, "p99_ms": 300},
 {"part": "preemption", "mean_ms": 0, "p50_ms": 0, "p99_ms": 0},
 {"part": "prefill", "mean_ms": 70, "p50_ms": 60, "p99_ms": 400},
 {"part": "first_token_pass", "mean_ms": 25, "p50_ms": 20, "p99_ms": 90}]}}`

func TestAggregateBar(t *testing.T) {
	p, err := parseReport([]byte(breakdownJSON))
	if err != nil {
		t.Fatal(err)
	}
	b := aggregateBar(p.Breakdown)
	if b == nil || b.TotalMs != 123.4 || b.Title != "Mean of 987 requests" {
		t.Fatalf("bar = %+v", b)
	}
	var sum, share float64
	for _, g := range b.Segs {
		sum += g.Ms
		share += g.Pct
	}
	if math.Abs(sum-123.4) > 1e-9 || math.Abs(share-100) > 1e-9 {
		t.Errorf("parts sum to %v ms, %v %%", sum, share)
	}
	if got := len(b.Shown()); got != 4 {
		t.Errorf("%d segments drawn, want the 4 non-zero ones", got)
	}
	if a := b.Aria(); !strings.Contains(a, "Prefill 70.0 ms (56.7 %)") || strings.Contains(a, "Preemption") {
		t.Errorf("aria = %q", a)
	}
	rows := legendRows(p.Breakdown, b, nil)
	if len(rows) != 6 || rows[2].Label != "Engine queue" || rows[2].P99 != "300.0 ms" || rows[0].Request != "" {
		t.Errorf("legend = %+v", rows)
	}
	if aggregateBar(nil) != nil {
		t.Error("a bar without a breakdown")
	}
}

func TestRequestBar(t *testing.T) {
	// a disaggregated request's parts arrive in map order: the bar puts
	// them in the order they happen, unknown parts last
	r := requestBar(17, map[string]float64{"first_token_pass": 3, "kv_transfer": 2, "frontend": 1, "prefill": 4, "decode_queue": 0.5, "new_part": 1})
	var order []string
	for _, g := range r.Segs {
		order = append(order, g.Part)
	}
	if got := strings.Join(order, ","); got != "frontend,prefill,kv_transfer,decode_queue,first_token_pass,new_part" {
		t.Errorf("order = %s", got)
	}
	if r.TotalMs != 11.5 || r.Title != "Request 17" {
		t.Errorf("bar = %+v", r)
	}
	p, _ := parseReport([]byte(breakdownJSON))
	rows := legendRows(p.Breakdown, aggregateBar(p.Breakdown), r)
	last := rows[len(rows)-1]
	if rows[0].Request != "1.00 ms" || rows[1].Request != "—" || last.Part != "new_part" || last.Mean != "—" {
		t.Errorf("legend with a request = %+v", rows)
	}
	if requestBar(1, nil) != nil {
		t.Error("a bar for a request without a first token")
	}
}

func TestRequestTableBreakdown(t *testing.T) {
	jsonl := `{"uuid":1,"ttft_ms":10,"ttft_breakdown_ms":{"frontend":7.5,"prefill":2.5},"terminal_status":"completed"}
{"uuid":2,"ttft_ms":null,"ttft_breakdown_ms":null,"terminal_status":"rejected"}
`
	tab, err := parseRequests([]byte(jsonl))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(tab.Columns, ","); got != "uuid,ttft_ms,terminal_status" {
		t.Errorf("columns = %s (the breakdown is no column)", got)
	}
	if bd, ok := tab.Breakdown["1"]; !ok || bd["prefill"] != 2.5 {
		t.Errorf("breakdown of 1 = %v", bd)
	}
	if bd, ok := tab.Breakdown["2"]; !ok || bd != nil {
		t.Errorf("breakdown of 2 = %v, %v (want a known nil)", bd, ok)
	}
	if got := tab.CSV(); !strings.HasPrefix(got, "uuid,ttft_ms,terminal_status,ttft_breakdown_ms.frontend,ttft_breakdown_ms.prefill\n1,10,completed,7.5,2.5\n2,,rejected,,\n") {
		t.Errorf("csv = %q", got)
	}
	if !tab.HasUUID("2") || tab.HasUUID("3") || tab.UUIDRange() != "its ids go from 1 to 2" {
		t.Error("uuid lookup")
	}
	if tab.UUID([]string{"7", "x", "y"}) != "7" {
		t.Error("UUID of a row")
	}
}

func TestGlossaryHasParts(t *testing.T) {
	n := 0
	for _, g := range Glossary {
		if strings.HasPrefix(g.Name, "TTFT: ") {
			n++
		}
	}
	if n != len(metrics.TTFTParts) {
		t.Errorf("%d TTFT part terms, want %d", n, len(metrics.TTFTParts))
	}
}

func TestFmtMs(t *testing.T) {
	for v, want := range map[float64]string{0.4249: "0.42 ms", 184.33: "184.3 ms", 4456.2: "4,456 ms (4.5 s)", math.NaN(): "—"} {
		if got := fmtMs(v); got != want {
			t.Errorf("fmtMs(%v) = %q, want %q", v, got, want)
		}
	}
}

func timelineOf(t *testing.T, events string) *requestTimeline {
	t.Helper()
	var tl requestTimeline
	if err := json.Unmarshal([]byte(`{"uuid": 17, "events": [`+events+`]}`), &tl); err != nil {
		t.Fatal(err)
	}
	return &tl
}

func TestTimelineView(t *testing.T) {
	ev := []string{
		`{"t_ms": 100, "event": "arrival", "input_length": 512, "output_length": 7}`,
		`{"t_ms": 107.5, "event": "routed", "pool": "aggregated", "worker": 0, "dp_rank": 0, "overlap_tokens": 64}`,
		`{"t_ms": 109.1, "event": "admitted", "worker": 0, "reused_tokens": 64}`,
		`{"t_ms": 109.1, "event": "pass", "worker": 0, "end_ms": 120, "pass_ms": 10.9, "batch_requests": 12, "prefill_tokens": 200, "decode_tokens": 11, "tokens": 0}`,
		`{"t_ms": 120, "event": "pass", "worker": 0, "end_ms": 130.2, "pass_ms": 10.2, "batch_requests": 12, "prefill_tokens": 248, "decode_tokens": 11, "tokens": 1}`,
		`{"t_ms": 130.2, "event": "first_token"}`,
	}
	for i := range 6 { // six decode passes: folded into one row
		ev = append(ev, `{"t_ms": `+ftoa(131+float64(i)*10)+`, "event": "pass", "worker": 0, "end_ms": `+ftoa(140+float64(i)*10)+`, "pass_ms": 9, "batch_requests": `+ftoa(8+float64(i))+`, "prefill_tokens": 0, "decode_tokens": 9, "tokens": 1}`)
	}
	ev = append(ev, `{"t_ms": 190, "event": "completed", "output_length": 7}`, `{"t_ms": 191, "event": "teleported", "where": "moon"}`)
	v := timelineView(17, timelineOf(t, strings.Join(ev, ",")))
	var kinds []string
	for _, r := range v.Rows {
		kinds = append(kinds, r.Kind)
	}
	if got := strings.Join(kinds, ","); got != "arrival,routed,admitted,pass,pass,first_token,passes,completed,teleported" {
		t.Fatalf("rows = %s", got)
	}
	if r := v.Rows[3]; r.Label != "Prefill pass" || r.Time != "+9.10 ms" || !strings.Contains(r.Text, "12 requests in the batch (200 prefill + 11 decode tokens), emitted 0 tokens") {
		t.Errorf("prefill pass = %+v", r)
	}
	if r := v.Rows[4]; r.Label != "First-token pass" {
		t.Errorf("first-token pass = %+v", r)
	}
	run := v.Rows[6]
	if run.N != 6 || run.First != 2 || run.Label != "Decode passes" || !strings.Contains(run.Text, "6 passes on worker 0 until +90.0 ms: emitted 6 tokens; batch 8–13 requests (mean 10.5); pass time 9.00 ms–9.00 ms") {
		t.Errorf("run = %+v", run)
	}
	if len(v.passes) != 8 {
		t.Errorf("%d passes", len(v.passes))
	}
	if got := v.PassesPage(run.First, run.N, 0); len(got) != 6 || got[0].N != 3 || got[5].Batch != "13" || got[0].Start != "+31.0 ms" || got[0].End != "+40.0 ms" {
		t.Errorf("page = %+v", got)
	}
	if got := v.PassesPage(run.First, run.N, 1); len(got) != 0 {
		t.Errorf("page 2 = %+v", got)
	}
	if r := v.Rows[1]; r.Text != "to aggregated worker 0, the router saw 64 of its prompt tokens cached there" {
		t.Errorf("routed = %q", r.Text)
	}
	if r := v.Rows[8]; r.Label != "teleported" || r.Text != "where moon" {
		t.Errorf("unknown event = %+v", r)
	}
	want := "Request 17: 512-token prompt, 7 output tokens; first token after 30.2 ms, completed after 90.0 ms, on aggregated worker 0, in 8 engine passes (1 prefill)."
	if !v.Found || v.Head != want {
		t.Errorf("head = %q", v.Head)
	}
	if nv := timelineView(99, nil); nv.Found || !strings.Contains(nv.Head, "not in this run") {
		t.Errorf("missing = %+v", nv)
	}
}

func TestTimelinePreempted(t *testing.T) {
	v := timelineView(3, timelineOf(t, `{"t_ms": 0, "event": "arrival", "input_length": 10, "output_length": 2},
	 {"t_ms": 1, "event": "pass", "worker": 1, "pass_ms": 1, "batch_requests": 2, "prefill_tokens": 10, "decode_tokens": 0, "tokens": 0},
	 {"t_ms": 2, "event": "preempted", "worker": 1},
	 {"t_ms": 5, "event": "rejected", "reason": "kv_capacity"}`))
	if !strings.Contains(v.Head, "rejected after 5.00 ms") || !strings.Contains(v.Head, "preempted 1×") {
		t.Errorf("head = %q", v.Head)
	}
	if r := v.Rows[len(v.Rows)-1]; r.Text != "kv capacity" {
		t.Errorf("rejected = %+v", r)
	}
}

func TestParseUUID(t *testing.T) {
	if n, err := parseUUID(" #17 "); err != nil || n != 17 {
		t.Errorf("parseUUID = %d, %v", n, err)
	}
	for _, bad := range []string{"", "0", "-3", "1.5", "x"} {
		if _, err := parseUUID(bad); err == nil {
			t.Errorf("parseUUID(%q) accepted", bad)
		}
	}
}

func TestRealRows(t *testing.T) {
	rows := realRows([]realMetric{{schema.TTFT.Key(schema.Mean), 100, 112, 0.12}, {schema.RequestThroughputRPS, 2, 1.9, -0.05}, {"x", 1, math.NaN(), math.NaN()}})
	if r := rows[0]; r.Measured != "100 ms" || r.Predicted != "112 ms" || r.Error != "+12.0 %" || !r.Bad {
		t.Errorf("row 0 = %+v", r)
	}
	if r := rows[1]; r.Predicted != "1.90 req/s" || r.Error != "-5.0 %" || r.Bad {
		t.Errorf("row 1 = %+v", r)
	}
	if r := rows[2]; r.Error != "—" || r.Predicted != "—" {
		t.Errorf("row 2 = %+v", r)
	}
}

func ftoa(v float64) string { b, _ := json.Marshal(v); return string(b) }

func TestRealView(t *testing.T) {
	v := realView("aiperf", "a.json", []realMetric{
		{schema.TTFT.Key(schema.Mean), 100, 110, 0.1}, {schema.TTFT.Key(schema.P75), 120, 130, 1.0 / 12}, {schema.RequestThroughputRPS, 2, 2, 0},
		{schema.CompletedRequests, 89, 1000, 1000.0/89 - 1}, {schema.InputLen.Key(schema.Mean), 550, 560, 560.0/550 - 1},
	})
	var main, more []string
	for _, r := range v.Rows {
		main = append(main, r.Key)
	}
	for _, r := range v.More {
		more = append(more, r.Key)
	}
	if strings.Join(main, ",") != "mean_ttft_ms,request_throughput_rps" || strings.Join(more, ",") != "p75_ttft_ms,completed_requests,mean_input_sequence_length" {
		t.Errorf("split = %v | %v", main, more)
	}
	if !strings.Contains(v.Note, "completed requests 89 measured vs 1,000 predicted") || strings.Contains(v.Note, "prompt") {
		t.Errorf("note = %q", v.Note)
	}
	if realView("x", "", []realMetric{{schema.TTFT.Key(schema.Mean), 1, 1, 0}}).Note != "" {
		t.Error("a note without a mismatch")
	}
}
