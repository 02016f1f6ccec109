// Package measured reads real benchmark runs (AIPerf's exports and
// `vllm bench serve --save-result` JSON), holds them against a prediction
// and turns their per-request records into a trace the simulator replays.
// It parses bytes only: no files, no clock, so the page runs it too.
//
// Measured values are stored under the simulator report's summary keys
// (core/report: "mean_ttft_ms", "p99_itl_ms", "request_throughput_rps", …)
// with the report's definitions, which are not always the tools' names:
//
//   - TTFT: AIPerf time_to_first_token (ttft before 2025-10), vLLM ttft.
//   - ITL, every gap between consecutive output chunks of every request:
//     AIPerf inter_chunk_latency, vLLM itl.
//   - TPOT, per request (last − first token) / (tokens − 1): AIPerf
//     inter_token_latency (AIPerf's "ITL" is this per-request figure),
//     vLLM tpot.
//   - E2E: AIPerf request_latency, vLLM e2el.
//   - Throughputs in requests/s and tokens/s; durations in ms.
package measured

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/dynosim/dynosim-web/core/report/schema"
	"github.com/dynosim/dynosim-web/core/workload"
)

// File is one file of a measured run, as uploaded or read from disk.
type File struct {
	Name string
	Data []byte
}

// Run is one measured benchmark run.
type Run struct {
	Tool     string             // "aiperf" or "vllm bench serve"
	Files    []string           // the names it was read from
	Summary  map[string]float64 // measured values under the simulator report's summary keys (e.g. "mean_ttft_ms", "p99_ttft_ms", "mean_itl_ms", "mean_tpot_ms", "mean_e2e_latency_ms", request and output-token throughput...), only those the export has
	Requests []Request          // per-request records, in start order (empty when the export has none)

	gaps   []float64              // every inter-token gap (ms) the records hold, for the ITL CDF
	pcts   map[schema.Family][]qv // the quantiles the summary states
	spanMs float64                // first request start to last response, from the records

	// How a vLLM result offered its load, for arrivals it did not record.
	rate        float64 // --request-rate (requests/s); 0: inf
	concurrency int     // --max-concurrency; 0: none
	startTimes  bool    // the result has start_times
}

// Request is one measured request.
type Request struct {
	StartMs                   float64 // since the run's first request started
	InputTokens, OutputTokens int
	TTFTMs, ITLMs, E2EMs      float64 // NaN when the export does not have it
}

// qv is one stated quantile: q in [0, 1] and its value.
type qv struct{ q, v float64 }

// Tool names.
const (
	ToolAIPerf = "aiperf"
	ToolVLLM   = "vllm bench serve"
)

// kinds of file Parse recognises.
type kind int

const (
	kindAIPerfSummary kind = iota + 1
	kindAIPerfRecords
	kindVLLM
)

// maxTokens bounds one request's lengths: workload.MaxRequestTokens, the
// most the trace reader accepts. (A summary-only result's request count
// is bounded by the trace it makes: Trace.)
const maxTokens = workload.MaxRequestTokens

// maxSpanMs bounds a run's first to last request start (a year; the
// simulator's virtual time ends at 100 years).
const maxSpanMs = 365 * 864e5

// maxFile bounds one file (a benchmark export of a GB is a mistake).
const maxFile = 1 << 30

// Parse reads one run from its files: an AIPerf summary (profile_export_aiperf.json) and/or its per-request profile_export.jsonl (either alone or both together), or one `vllm bench serve --save-result` JSON (with or without --save-detailed). It detects the format from the content (names only help errors). Errors name the file and, for JSONL, the line and field.
func Parse(files ...File) (*Run, error) {
	if len(files) == 0 {
		return nil, errors.New("measured: no files: give an AIPerf profile_export_aiperf.json and/or profile_export.jsonl, or a vllm bench serve result JSON")
	}
	var summary, records, vllm *File
	var top map[string]json.RawMessage // the summary's or vLLM result's object
	names := make([]string, len(files))
	for i := range files {
		f := &files[i]
		if f.Name == "" {
			f.Name = fmt.Sprintf("file %d", i+1)
		}
		names[i] = f.Name
		if len(f.Data) > maxFile {
			return nil, fmt.Errorf("%s: %d bytes is larger than the %d-byte limit", f.Name, len(f.Data), maxFile)
		}
		data, err := cleanJSON(f.Name, f.Data)
		if err != nil {
			return nil, err
		}
		k, obj, err := detect(f.Name, data)
		if err != nil {
			return nil, err
		}
		g := &File{Name: f.Name, Data: data}
		slot := map[kind]**File{kindAIPerfSummary: &summary, kindAIPerfRecords: &records, kindVLLM: &vllm}[k]
		if *slot != nil {
			return nil, fmt.Errorf("%s and %s: both are %s; one run has at most one of each file", (*slot).Name, f.Name, kindName(k))
		}
		*slot = g
		if obj != nil {
			top = obj
		}
	}
	if vllm != nil && len(files) > 1 {
		return nil, fmt.Errorf("%s: a vllm bench serve result is a whole run on its own; parse it without %s", vllm.Name, strings.Join(slices.DeleteFunc(slices.Clone(names), func(s string) bool { return s == vllm.Name }), ", "))
	}
	r := &Run{Files: names, Summary: map[string]float64{}, pcts: map[schema.Family][]qv{}}
	var err error
	if vllm != nil {
		r.Tool = ToolVLLM
		err = parseVLLM(r, vllm.Name, top)
	} else {
		r.Tool = ToolAIPerf
		if records != nil {
			err = parseAIPerfRecords(r, records.Name, records.Data)
		}
		if err == nil && summary != nil {
			err = parseAIPerfSummary(r, summary.Name, top)
		} else if err == nil {
			summarize(r) // the records alone: compute what the summary would say
		}
	}
	if err != nil {
		return nil, err
	}
	if n := len(r.Requests); n > 0 && r.Requests[n-1].StartMs > maxSpanMs {
		return nil, fmt.Errorf("%s: the requests start %.0f days apart: not one benchmark run", strings.Join(names, ", "), r.Requests[n-1].StartMs/864e5)
	}
	if len(r.Summary) == 0 && len(r.Requests) == 0 {
		return nil, fmt.Errorf("%s: holds no metric this simulator reports (TTFT, ITL, TPOT, E2E, throughput)", strings.Join(names, ", "))
	}
	return r, nil
}

func kindName(k kind) string {
	switch k {
	case kindAIPerfSummary:
		return "AIPerf summaries (profile_export_aiperf.json)"
	case kindAIPerfRecords:
		return "AIPerf per-request exports (profile_export.jsonl)"
	}
	return "vllm bench serve results"
}

// detect tells the format from the content. A single JSON object is an
// AIPerf summary, a vLLM result, or a one-line AIPerf JSONL; anything else
// must be JSONL whose first record looks like AIPerf's.
func detect(name string, data []byte) (kind, map[string]json.RawMessage, error) {
	trim := bytes.TrimSpace(data)
	if len(trim) == 0 {
		return 0, nil, fmt.Errorf("%s: empty file", name)
	}
	if trim[0] != '{' {
		return 0, nil, fmt.Errorf("%s: not a JSON object; want an AIPerf profile_export_aiperf.json or profile_export.jsonl, or a vllm bench serve result JSON", name)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(trim, &top); err != nil {
		first, _, _ := bytes.Cut(trim, []byte("\n"))
		var line map[string]json.RawMessage
		if json.Unmarshal(first, &line) == nil && isRecord(line) {
			return kindAIPerfRecords, nil, nil
		}
		return 0, nil, syntaxErr(name, data, err)
	}
	switch {
	case isRecord(top):
		return kindAIPerfRecords, nil, nil
	case isAIPerfSummary(top):
		return kindAIPerfSummary, top, nil
	case isVLLM(top):
		return kindVLLM, top, nil
	}
	keys := make([]string, 0, len(top))
	for k := range top {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if len(keys) > 6 {
		keys = append(keys[:6], "…")
	}
	return 0, nil, fmt.Errorf("%s: not an AIPerf or vllm bench serve export (keys: %s)", name, strings.Join(keys, ", "))
}

func isRecord(m map[string]json.RawMessage) bool {
	_, md := m["metadata"]
	_, mt := m["metrics"]
	return md && mt
}

// isAIPerfSummary: the current summary keys metrics at the top level, each
// an object with a unit (GenAI-Perf's layout); AIPerf before 2025-10 nested
// them under "records".
func isAIPerfSummary(m map[string]json.RawMessage) bool {
	if rec, ok := m["records"]; ok && isObject(rec) {
		return true
	}
	for _, tag := range []string{"request_throughput", "request_latency", "time_to_first_token", "request_count", "inter_token_latency", "output_token_throughput"} {
		if v, ok := m[tag]; ok && isObject(v) {
			return true
		}
	}
	return false
}

func isVLLM(m map[string]json.RawMessage) bool {
	for _, k := range []string{"mean_ttft_ms", "mean_e2el_ms", "input_lens", "ttfts"} {
		if _, ok := m[k]; ok {
			return true
		}
	}
	_, c := m["completed"]
	_, d := m["duration"]
	return c && d
}

func isObject(raw json.RawMessage) bool {
	b := bytes.TrimSpace(raw)
	return len(b) > 0 && b[0] == '{'
}

// cleanJSON turns the bare NaN tokens Python's json module writes for an
// undefined statistic into null (not measured), and rejects ±Infinity, so
// a measured value is always finite. Strings are left alone.
func cleanJSON(name string, data []byte) ([]byte, error) {
	var out []byte
	last, line := 0, 1
	inStr, esc := false, false
	for i := 0; i < len(data); i++ {
		c := data[i]
		if c == '\n' {
			line++
		}
		if inStr {
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
			continue
		}
		switch {
		case c == '"':
			inStr = true
		case c == 'N' && bytes.HasPrefix(data[i:], []byte("NaN")):
			out = append(append(out, data[last:i]...), "null"...)
			i += 2
			last = i + 1
		case (c == 'I' || c == '-') && (bytes.HasPrefix(data[i:], []byte("Infinity")) || bytes.HasPrefix(data[i:], []byte("-Infinity"))):
			return nil, fmt.Errorf("%s:%d: Infinity is not a measured value", name, line)
		}
	}
	if out == nil {
		return data, nil
	}
	return append(out, data[last:]...), nil
}

// syntaxErr names the line of a JSON syntax error.
func syntaxErr(name string, data []byte, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) && se.Offset > 0 && int(se.Offset) <= len(data) {
		line := 1 + bytes.Count(data[:se.Offset], []byte("\n"))
		return fmt.Errorf("%s:%d: invalid JSON: %v", name, line, err)
	}
	return fmt.Errorf("%s: invalid JSON: %v", name, err)
}

// check accepts a measured value: finite and ≥ 0.
func check(v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return fmt.Errorf("must be a finite number ≥ 0, got %v", v)
	}
	return nil
}

// percentile is numpy's default (linear) percentile of sorted xs, the rule
// both tools use for the percentiles they state.
func percentile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	pos := q * float64(len(xs)-1)
	lo := int(math.Floor(pos))
	if lo >= len(xs)-1 {
		return xs[len(xs)-1]
	}
	frac := pos - float64(lo)
	return xs[lo] + frac*(xs[lo+1]-xs[lo])
}

// putDist writes the report's statistics of samples xs under family;
// nothing for no samples.
func putDist(s map[string]float64, family schema.Family, xs []float64) {
	xs = slices.DeleteFunc(slices.Clone(xs), math.IsNaN)
	if len(xs) == 0 {
		return
	}
	slices.Sort(xs)
	var sum float64
	for _, x := range xs {
		sum += x
	}
	mean := sum / float64(len(xs))
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	s[family.Key(schema.Mean)] = mean
	s[family.Key(schema.Std)] = math.Sqrt(ss / float64(len(xs))) // numpy's std (population)
	s[family.Key(schema.Min)] = xs[0]
	s[family.Key(schema.Max)] = xs[len(xs)-1]
	s[family.Key(schema.Median)] = percentile(xs, 0.5)
	for _, p := range []struct {
		stat schema.Stat
		pct  int
	}{{schema.P75, 75}, {schema.P90, 90}, {schema.P95, 95}, {schema.P99, 99}} {
		s[family.Key(p.stat)] = percentile(xs, float64(p.pct)/100)
	}
}
