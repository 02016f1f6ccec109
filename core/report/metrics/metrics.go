// Package metrics says what the report's metrics mean and how the tables
// show them: the AIPerf-style table spec shared by `dynosim predict
// --format table` and the page, the number format, and the glossary the
// page's tooltips and help section read. It depends on nothing but the
// standard library, so the page's UI can import it cheaply.
package metrics

import (
	"fmt"
	"math"
	"strings"

	"github.com/dynosim/dynosim-web/core/report/schema"
)

// Column is one statistic column of the table: its heading and the
// statistic it shows.
type Column struct {
	Head   string
	Prefix schema.Stat
}

// Columns are AIPerf's console columns (avg, min, max, p99, p90, p50, p75,
// std).
var Columns = []Column{
	{"avg", schema.Mean}, {"min", schema.Min}, {"max", schema.Max}, {"p99", schema.P99},
	{"p90", schema.P90}, {"p50", schema.Median}, {"p75", schema.P75}, {"std", schema.Std},
}

// Metric is one row of distribution statistics or one single-value line.
type Metric struct {
	Label string // as AIPerf prints it, with its unit
	Key   string // summary key (a line) or schema.Family (a row)
	Help  string // one sentence for tooltips and the glossary
}

// Rows are the distribution rows, in AIPerf's order.
var Rows = []Metric{
	{"Time to First Token (ms)", string(schema.TTFT), "Arrival to the first output token: router and engine queueing, prefill (and the KV transfer when disaggregated)."},
	{"Time to Second Token (ms)", string(schema.TTST), "First to second output token: one decode step, or more when the request was preempted or its batch was busy prefilling."},
	{"Request Latency (ms)", string(schema.E2E), "Arrival to the last output token (end-to-end latency)."},
	{"Inter Token Latency (ms)", string(schema.ITL), "Time between consecutive output tokens of a request (every gap, over all requests)."},
	{"Output Token Throughput Per User (tokens/sec/user)", string(schema.PerUser), "1000 / inter-token gap: the streaming speed one user sees."},
	{"Output Sequence Length (tokens)", string(schema.OutputLen), "Output tokens a completed request produced."},
	{"Input Sequence Length (tokens)", string(schema.InputLen), "Prompt tokens of a completed request."},
}

// Lines are the single-value lines under the table. Goodput appears only
// when the run had an SLA.
var Lines = []Metric{
	{"Output Token Throughput (tokens/sec)", schema.OutputThroughputTokS, "Output tokens of completed requests per simulated second."},
	{"Request Throughput (requests/sec)", schema.RequestThroughputRPS, "Completed requests per simulated second."},
	{"Request Count (requests)", schema.NumRequests, "Requests that arrived, whatever their outcome."},
	{"Goodput (requests/sec)", schema.GoodputRequestThroughputRPS, "Completed requests per simulated second that met every SLA bound (TTFT, ITL, or E2E)."},
}

// Table is the AIPerf-style table of one report's summary, formatted.
type Table struct {
	Title   string
	Columns []string
	Rows    []Row
	Lines   []Row // Cells holds one value
}

// Row is a formatted row.
type Row struct {
	Label, Help string
	Cells       []string
}

// Title is AIPerf's console title.
const Title = "NVIDIA AIPerf | LLM Metrics"

// Build formats the table of summary (the report's summary map; a missing
// or undefined value prints as n/a).
func Build(summary map[string]float64) Table {
	t := Table{Title: Title}
	for _, c := range Columns {
		t.Columns = append(t.Columns, c.Head)
	}
	for _, m := range Rows {
		r := Row{Label: m.Label, Help: m.Help}
		for _, c := range Columns {
			r.Cells = append(r.Cells, Format(value(summary, schema.Family(m.Key).Key(c.Prefix))))
		}
		t.Rows = append(t.Rows, r)
	}
	for _, m := range Lines {
		v, ok := summary[m.Key]
		if !ok {
			continue // goodput without an SLA
		}
		t.Lines = append(t.Lines, Row{Label: m.Label, Help: m.Help, Cells: []string{Format(v)}})
	}
	return t
}

func value(s map[string]float64, k string) float64 {
	if v, ok := s[k]; ok {
		return v
	}
	return math.NaN()
}

// Format prints v with thousands separators: integers as integers, other
// values with two decimals; an undefined value is n/a.
func Format(v float64) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "n/a"
	case v == math.Trunc(v) && math.Abs(v) < 1e15:
		return group(fmt.Sprintf("%.0f", math.Abs(v)), v < 0)
	}
	s := fmt.Sprintf("%.2f", math.Abs(v))
	i, frac, _ := strings.Cut(s, ".")
	return group(i, v < 0) + "." + frac
}

// group inserts thousands separators into the digits of an integer part.
func group(digits string, neg bool) string {
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, ch := range digits {
		if i > 0 && (len(digits)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(ch)
	}
	return b.String()
}

// Text renders the table as the console prints it.
func (t Table) Text() string {
	const colW = 12
	labelW := len("Metric")
	for _, r := range append(append([]Row(nil), t.Rows...), t.Lines...) {
		labelW = max(labelW, len([]rune(r.Label)))
	}
	labelW += 2
	line := strings.Repeat("─", labelW+colW*len(t.Columns))
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n%s\n%-*s", t.Title, line, labelW, "Metric")
	for _, c := range t.Columns {
		fmt.Fprintf(&b, "%*s", colW, c)
	}
	b.WriteString("\n" + line + "\n")
	for _, r := range t.Rows {
		fmt.Fprintf(&b, "%-*s", labelW, r.Label)
		for _, v := range r.Cells {
			fmt.Fprintf(&b, "%*s", colW, v)
		}
		b.WriteString("\n")
	}
	for _, r := range t.Lines {
		fmt.Fprintf(&b, "%-*s%*s\n", labelW, r.Label, colW, r.Cells[0])
	}
	b.WriteString(line + "\n")
	return b.String()
}

// Duration prints milliseconds as a human duration: "850 ms", "12.4 s",
// "59 min 2 s", "3 h 12 min".
func Duration(ms float64) string {
	switch {
	case math.IsNaN(ms) || math.IsInf(ms, 0):
		return "n/a"
	case ms < 1000:
		return Format(math.Round(ms*10)/10) + " ms"
	case ms < 60_000:
		return fmt.Sprintf("%.1f s", ms/1000)
	case ms < 3_600_000:
		m := math.Floor(ms / 60_000)
		return fmt.Sprintf("%.0f min %.0f s", m, math.Floor((ms-m*60_000)/1000))
	}
	h := math.Floor(ms / 3_600_000)
	return fmt.Sprintf("%s h %.0f min", Format(h), math.Floor((ms-h*3_600_000)/60_000))
}
