package main

import (
	"github.com/dynosim/dynosim-web/core/measured"
	"github.com/dynosim/dynosim-web/core/report/schema"
)

// realFile is one uploaded file of a real run.
type realFile struct {
	name string
	data []byte
}

// cdfMetrics are the distributions a real run is overlaid on: the report's
// distributions of the same names.
var cdfMetrics = []schema.Family{schema.TTFT, schema.ITL, schema.E2E}

// compareRun parses a real run and holds it against report (the report
// JSON). The answer is made of the types js.ValueOf takes: {tool, files,
// rows: [{key, measured, predicted, error}], cdf: {metric: {qs, values}},
// trace, trace_note} (a metric the run has no per-request values of is left
// out; trace is the run's requests as a Mooncake trace, absent when it has
// none).
func compareRun(files []realFile, report []byte) (map[string]any, error) {
	in := make([]measured.File, len(files))
	for i, f := range files {
		in[i] = measured.File{Name: f.name, Data: f.data}
	}
	run, err := measured.Parse(in...)
	if err != nil {
		return nil, err
	}
	rows, err := measured.Compare(run, report)
	if err != nil {
		return nil, err
	}
	list := make([]any, len(rows))
	for i, r := range rows {
		list[i] = map[string]any{"key": r.Key, "measured": r.Measured, "predicted": r.Predicted, "error": r.Error}
	}
	cdf := map[string]any{}
	for _, m := range cdfMetrics {
		if qs, vs := run.CDF(m); len(qs) > 1 && len(qs) == len(vs) {
			cdf[string(m)] = map[string]any{"qs": anys(qs), "values": anys(vs)}
		}
	}
	names := make([]any, len(run.Files))
	for i, n := range run.Files {
		names[i] = n
	}
	out := map[string]any{"tool": run.Tool, "files": names, "rows": list, "cdf": cdf}
	// Its requests as a trace (what dynosim convert-trace writes), so the
	// page can replay the benchmark's own workload: only one the page could
	// replay (maxTrace), sized before it is built (issue 29 item 14: a
	// 1.4 KB summary can claim a trace of a gigabyte, three copies of which
	// would not fit the wasm heap).
	if size, err := run.TraceSize(); err == nil && size <= maxTrace {
		if trace, err := run.Trace(); err == nil {
			out["trace"], out["trace_note"] = string(trace), run.TraceNote()
		}
	}
	return out, nil
}

func anys(xs []float64) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}
