package measured

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/dynosim/dynosim-web/timing"

	"github.com/dynosim/dynosim-web/core/report/schema"
)

// aiperfDists are the AIPerf distributions we keep: tags (current name
// first, then the name before AIPerf's 2025-10 rename to GenAI-Perf's
// names) → the report family. time says the values are durations.
var aiperfDists = []struct {
	tags   []string
	family schema.Family
	time   bool
}{
	{[]string{"time_to_first_token", "ttft"}, schema.TTFT, true},
	{[]string{"time_to_second_token", "ttst"}, schema.TTST, true},
	// AIPerf's per-chunk gaps are the report's ITL (every gap of every
	// request); AIPerf's inter_token_latency is per request, (latency −
	// TTFT) / (OSL − 1), which is the report's TPOT.
	{[]string{"inter_chunk_latency"}, schema.ITL, true},
	{[]string{"inter_token_latency"}, schema.TPOT, true},
	{[]string{"request_latency"}, schema.E2E, true},
	{[]string{"input_sequence_length"}, schema.InputLen, false},
	// output_sequence_length counts reasoning tokens too, as the
	// simulator's output does; output_token_count does not.
	{[]string{"output_sequence_length"}, schema.OutputLen, false},
}

// aiperfScalars are AIPerf's single-value metrics (their avg) we keep.
var aiperfScalars = []struct {
	tag, key string
	units    []string // accepted units; "time" means any duration unit
}{
	{"request_throughput", schema.RequestThroughputRPS, []string{"requests/sec", "requests/s"}},
	{"output_token_throughput", schema.OutputThroughputTokS, []string{"tokens/sec", "tokens/s"}},
	{"total_token_throughput", schema.TotalThroughputTokS, []string{"tokens/sec", "tokens/s"}},
	{"request_count", schema.CompletedRequests, []string{"requests"}},
	{"total_isl", schema.TotalInputTokens, []string{"tokens"}},
	{"total_osl", schema.TotalOutputTokens, []string{"tokens"}},
	{"benchmark_duration", schema.DurationMs, []string{"time"}},
}

// aiperfStats maps AIPerf's statistic names to the report's prefixes
// (AIPerf's p1…p25 have no report key; they still feed the CDF).
var aiperfStats = []struct {
	name   string
	prefix schema.Stat
	q      float64 // its quantile, or −1
}{
	{"avg", schema.Mean, -1}, {"std", schema.Std, -1},
	{"min", schema.Min, 0}, {"p1", "", 0.01}, {"p5", "", 0.05}, {"p10", "", 0.10}, {"p25", "", 0.25},
	{"p50", schema.Median, 0.5}, {"p75", schema.P75, 0.75}, {"p90", schema.P90, 0.9}, {"p95", schema.P95, 0.95},
	{"p99", schema.P99, 0.99}, {"max", schema.Max, 1},
}

// msPer is milliseconds per unit of a duration unit, 0 if unknown.
func msPer(unit string) float64 {
	switch unit {
	case "ns":
		return 1e-6
	case "us", "µs":
		return 1e-3
	case "ms":
		return 1
	case "s", "sec":
		return 1000
	}
	return 0
}

// parseAIPerfSummary reads profile_export_aiperf.json: metrics keyed by
// tag at the top level (GenAI-Perf's layout, AIPerf since 2025-10) or
// under "records" (earlier AIPerf), each {unit, avg, min, max, p1…p99, std}.
func parseAIPerfSummary(r *Run, name string, top map[string]json.RawMessage) error {
	metrics := top
	if rec, ok := top["records"]; ok && isObject(rec) {
		if err := json.Unmarshal(rec, &metrics); err != nil {
			return fmt.Errorf("%s: records: %v", name, err)
		}
	}
	entry := func(tags ...string) (string, map[string]json.RawMessage, error) {
		for _, tag := range tags {
			raw, ok := metrics[tag]
			if !ok || string(bytes.TrimSpace(raw)) == "null" {
				continue
			}
			var m map[string]json.RawMessage
			if err := json.Unmarshal(raw, &m); err != nil {
				return tag, nil, fmt.Errorf("%s: %s: must be an object {unit, avg, …}", name, tag)
			}
			return tag, m, nil
		}
		return "", nil, nil
	}
	for _, d := range aiperfDists {
		tag, m, err := entry(d.tags...)
		if err != nil {
			return err
		}
		if m == nil {
			continue
		}
		scale, err := unitScale(name, tag, m, d.time, []string{"tokens"})
		if err != nil {
			return err
		}
		var pts []qv
		for _, st := range aiperfStats {
			v, ok, err := measure(m[st.name])
			if err != nil {
				return fmt.Errorf("%s: %s.%s: %v", name, tag, st.name, err)
			}
			if !ok {
				continue
			}
			v *= scale
			if st.prefix != "" {
				r.Summary[d.family.Key(st.prefix)] = v
			}
			if st.q >= 0 {
				pts = append(pts, qv{st.q, v})
			}
		}
		if len(pts) > 0 {
			r.pcts[d.family] = pts
		}
	}
	for _, s := range aiperfScalars {
		tag, m, err := entry(s.tag)
		if err != nil {
			return err
		}
		if m == nil {
			continue
		}
		isTime := s.units[0] == "time"
		scale, err := unitScale(name, tag, m, isTime, s.units)
		if err != nil {
			return err
		}
		v, ok, err := measure(m["avg"])
		if err != nil {
			return fmt.Errorf("%s: %s.avg: %v", name, tag, err)
		}
		if !ok {
			continue
		}
		r.Summary[s.key] = v * scale
	}
	return nil
}

// unitScale checks a metric's unit and returns the factor to the report's
// unit (ms for durations, 1 otherwise).
func unitScale(name, tag string, m map[string]json.RawMessage, isTime bool, units []string) (float64, error) {
	var unit string
	if raw, ok := m["unit"]; ok {
		if err := json.Unmarshal(raw, &unit); err != nil {
			return 0, fmt.Errorf("%s: %s.unit: must be a string", name, tag)
		}
	}
	if isTime {
		if f := msPer(unit); f > 0 {
			return f, nil
		}
		return 0, fmt.Errorf("%s: %s.unit: want ns, us, ms or sec, got %q", name, tag, unit)
	}
	if unit == "" || slices.Contains(units, unit) {
		return 1, nil
	}
	return 0, fmt.Errorf("%s: %s.unit: want %s, got %q", name, tag, strings.Join(units, " or "), unit)
}

// measure reads a measured value: a JSON number, finite and ≥ 0; absent
// or null is (0, false).
func measure(raw json.RawMessage) (float64, bool, error) {
	v, ok, err := number(raw)
	if err == nil && ok {
		err = check(v)
	}
	return v, ok && err == nil, err
}

// number reads a JSON number; absent or null is (0, false).
func number(raw json.RawMessage) (float64, bool, error) {
	b := bytes.TrimSpace(raw)
	if len(b) == 0 || string(b) == "null" {
		return 0, false, nil
	}
	var v float64
	if err := json.Unmarshal(b, &v); err != nil {
		return 0, false, fmt.Errorf("must be a number, got %s", clip(string(b)))
	}
	return v, true, nil
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// maxLine bounds one JSONL line (a record with a long chunk list is ~10 KB).
const maxLine = 64 << 20

// aiperfRecord is one line of profile_export.jsonl.
type aiperfRecord struct {
	Metadata map[string]json.RawMessage `json:"metadata"`
	Metrics  map[string]json.RawMessage `json:"metrics"`
	Error    json.RawMessage            `json:"error"`
}

// aiperfRec is one successful request of profile_export.jsonl.
type aiperfRec struct {
	start, end int64 // ns
	req        Request
	gaps       []float64
}

// parseAIPerfRecords reads profile_export.jsonl: one record per request,
// {metadata: {request_start_ns (timestamp_ns before 2025-10), …}, metrics:
// {tag: {value, unit}}, error}. Failed and cancelled requests and warmup
// records are left out: they have no latencies to compare and no output
// the simulator could reproduce.
func parseAIPerfRecords(r *Run, name string, data []byte) error {
	var recs []aiperfRec
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		q, keep, err := parseAIPerfLine(b)
		if err != nil {
			return fmt.Errorf("%s:%d: %s", name, line, err.Error())
		}
		if keep {
			recs = append(recs, q)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s:%d: %v", name, line+1, err)
	}
	if len(recs) == 0 {
		return fmt.Errorf("%s: no successful profiling request (every record is an error, cancelled or warmup)", name)
	}
	r.addAIPerfRecords(recs)
	return nil
}

// addAIPerfRecords appends recs to r in start order, times relative to the
// first start, and sets the run's span.
func (r *Run) addAIPerfRecords(recs []aiperfRec) {
	slices.SortStableFunc(recs, func(a, b aiperfRec) int {
		switch {
		case a.start < b.start:
			return -1
		case a.start > b.start:
			return 1
		}
		return 0
	})
	t0, last := recs[0].start, recs[0].end
	for _, q := range recs {
		q.req.StartMs = float64(q.start-t0) / 1e6
		r.Requests = append(r.Requests, q.req)
		r.gaps = append(r.gaps, q.gaps...)
		last = max(last, q.end)
	}
	r.spanMs = float64(last-t0) / 1e6
}

// parseAIPerfLine reads one record; keep is false for warmup, cancelled and
// failed requests. Errors lack the file and line, which the caller adds.
func parseAIPerfLine(b []byte) (q aiperfRec, keep bool, err error) {
	var x aiperfRecord
	if err := json.Unmarshal(b, &x); err != nil {
		return q, false, fmt.Errorf("invalid JSON: %v", err)
	}
	if x.Metadata == nil {
		return q, false, errors.New("metadata: missing (not an AIPerf profile_export.jsonl record)")
	}
	if x.Metrics == nil {
		return q, false, errors.New("metrics: missing (not an AIPerf profile_export.jsonl record)")
	}
	phase := str(x.Metadata["benchmark_phase"])
	if phase == "" {
		phase = str(x.Metadata["credit_phase"])
	}
	if phase == "warmup" || string(x.Metadata["was_cancelled"]) == "true" {
		return q, false, nil
	}
	if e := bytes.TrimSpace(x.Error); len(e) > 0 && string(e) != "null" {
		return q, false, nil
	}
	startKey := "request_start_ns"
	if _, ok := x.Metadata[startKey]; !ok {
		startKey = "timestamp_ns"
	}
	start, ok, err := nanos(x.Metadata[startKey])
	if err != nil {
		return q, false, fmt.Errorf("metadata.%s: %v", startKey, err)
	}
	if !ok {
		return q, false, errors.New("metadata.request_start_ns: missing")
	}
	q, err = aiperfRequest(&x, start)
	return q, err == nil, err
}

// aiperfRequest reads a kept record's token counts, latencies, chunk gaps
// and end time.
func aiperfRequest(x *aiperfRecord, start int64) (aiperfRec, error) {
	q := aiperfRec{start: start, req: Request{TTFTMs: math.NaN(), ITLMs: math.NaN(), E2EMs: math.NaN()}}
	var err error
	if q.req.InputTokens, err = recordTokens(x.Metrics, "input_sequence_length"); err != nil {
		return q, err
	}
	if q.req.OutputTokens, err = recordTokens(x.Metrics, "output_sequence_length"); err != nil {
		return q, err
	}
	for _, f := range []struct {
		dst  *float64
		tags []string
	}{
		{&q.req.TTFTMs, []string{"time_to_first_token", "ttft"}},
		{&q.req.E2EMs, []string{"request_latency"}},
		{&q.req.ITLMs, []string{"inter_token_latency"}},
	} {
		v, ok, err := recordValue(x.Metrics, f.tags...)
		if err != nil {
			return q, err
		}
		if ok {
			*f.dst = v
		}
	}
	if math.IsNaN(q.req.ITLMs) && q.req.OutputTokens >= 2 {
		q.req.ITLMs = (q.req.E2EMs - q.req.TTFTMs) / float64(q.req.OutputTokens-1) // NaN unless both known
	}
	if q.gaps, err = metricList(x.Metrics["inter_chunk_latency"]); err != nil {
		return q, fmt.Errorf("metrics.inter_chunk_latency: %v", err)
	}
	q.end = start
	if end, ok, err := nanos(x.Metadata["request_end_ns"]); err != nil {
		return q, fmt.Errorf("metadata.request_end_ns: %v", err)
	} else if ok {
		q.end = end
	} else if !math.IsNaN(q.req.E2EMs) {
		q.end = start + int64(timing.FromMs(q.req.E2EMs)) // saturating: a huge latency must not wrap
	}
	return q, nil
}

// recordValue is the first of tags present in metrics, in the report's unit.
func recordValue(metrics map[string]json.RawMessage, tags ...string) (float64, bool, error) {
	for _, tag := range tags {
		v, ok, err := metricValue(metrics[tag])
		if err != nil {
			return 0, false, fmt.Errorf("metrics.%s: %v", tag, err)
		}
		if ok {
			return v, true, nil
		}
	}
	return 0, false, nil
}

// recordTokens is a required token count in metrics.
func recordTokens(metrics map[string]json.RawMessage, tag string) (int, error) {
	v, ok, err := recordValue(metrics, tag)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, fmt.Errorf("metrics.%s: missing", tag)
	}
	if v != math.Trunc(v) || v > maxTokens {
		return 0, fmt.Errorf("metrics.%s: must be an integer in [0, %d], got %v", tag, maxTokens, v)
	}
	return int(v), nil
}

// metricValue reads a record metric {value, unit} as a number in the
// report's unit (ms for durations); absent or null is (0, false).
func metricValue(raw json.RawMessage) (float64, bool, error) {
	var m struct {
		Value json.RawMessage `json:"value"`
		Unit  string          `json:"unit"`
	}
	if b := bytes.TrimSpace(raw); len(b) == 0 || string(b) == "null" {
		return 0, false, nil
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return 0, false, fmt.Errorf("must be {value, unit}")
	}
	v, ok, err := measure(m.Value)
	if err != nil || !ok {
		return 0, false, err
	}
	if f := msPer(m.Unit); f > 0 {
		v *= f
	}
	return v, true, nil
}

// metricList reads a record metric whose value is a list of durations.
func metricList(raw json.RawMessage) ([]float64, error) {
	var m struct {
		Value []*float64 `json:"value"`
		Unit  string     `json:"unit"`
	}
	if b := bytes.TrimSpace(raw); len(b) == 0 || string(b) == "null" {
		return nil, nil
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("must be {value: [numbers], unit}")
	}
	f := msPer(m.Unit)
	if f == 0 {
		return nil, fmt.Errorf("unit: want ns, us, ms or sec, got %q", m.Unit)
	}
	out := make([]float64, 0, len(m.Value))
	for i, p := range m.Value {
		if p == nil {
			continue
		}
		if err := check(*p); err != nil {
			return nil, fmt.Errorf("value[%d]: %v", i, err)
		}
		out = append(out, *p*f)
	}
	return out, nil
}

// nanos reads a nanosecond timestamp exactly (a float64 would round
// 2025's 1.76e18 to 256 ns).
func nanos(raw json.RawMessage) (int64, bool, error) {
	b := bytes.TrimSpace(raw)
	if len(b) == 0 || string(b) == "null" {
		return 0, false, nil
	}
	if v, err := strconv.ParseInt(string(b), 10, 64); err == nil {
		if v < 0 {
			return 0, false, fmt.Errorf("must be ≥ 0, got %d", v)
		}
		return v, true, nil
	}
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil || v < 0 || v >= math.MaxInt64 {
		return 0, false, fmt.Errorf("must be a timestamp in ns, got %s", clip(string(b)))
	}
	return int64(v), true, nil
}

func str(raw json.RawMessage) string {
	var s string
	_ = json.Unmarshal(raw, &s) // not a string: ""
	return s
}

// summarize fills the summary from per-request records alone (an AIPerf
// JSONL without its summary), as AIPerf would: statistics over the
// successful requests, rates over the first start to the last response.
func summarize(r *Run) {
	n := len(r.Requests)
	if n == 0 {
		return
	}
	ttft, tpot, e2e, isl, osl := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	var in, out int
	for i, q := range r.Requests {
		ttft[i], tpot[i], e2e[i] = q.TTFTMs, q.ITLMs, q.E2EMs
		isl[i], osl[i] = float64(q.InputTokens), float64(q.OutputTokens)
		in, out = in+q.InputTokens, out+q.OutputTokens
	}
	s := r.Summary
	putDist(s, schema.TTFT, ttft)
	putDist(s, schema.TPOT, tpot)
	putDist(s, schema.ITL, r.gaps)
	putDist(s, schema.E2E, e2e)
	putDist(s, schema.InputLen, isl)
	putDist(s, schema.OutputLen, osl)
	s[schema.CompletedRequests] = float64(n)
	s[schema.TotalInputTokens] = float64(in)
	s[schema.TotalOutputTokens] = float64(out)
	if r.spanMs > 0 {
		sec := r.spanMs / 1000
		s[schema.DurationMs] = r.spanMs
		s[schema.RequestThroughputRPS] = float64(n) / sec
		s[schema.OutputThroughputTokS] = float64(out) / sec
		s[schema.InputThroughputTokS] = float64(in) / sec
		s[schema.TotalThroughputTokS] = float64(in+out) / sec
	}
}
