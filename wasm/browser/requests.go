//go:build js && wasm

package main

import (
	"syscall/js"

	"github.com/dynosim/dynosim-web/core/report"
)

// kept is the last run's report while its per-request records wait to be
// taken. A run with lazyRequests returns its report JSON at once and
// sim-worker.js posts it to the page before it calls takeRequests: the
// whole conversation trace's 7.4 MB of JSONL took 0.4–0.7 s to write here
// and more to copy, and the page shows the headline figures without them
// (issue 32 item 8).
var kept *report.Report

func keepRequests(rep *report.Report) { kept = rep }

// takeRequests() → the kept run's per-request JSONL, or undefined when no
// run kept one; it forgets the report, so its memory can go.
func takeRequests(this js.Value, args []js.Value) any {
	rep := kept
	kept = nil
	if rep == nil {
		return js.Undefined()
	}
	return string(rep.RequestsJSONL())
}
