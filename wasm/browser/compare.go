//go:build js && wasm

package main

import (
	"fmt"
	"syscall/js"
)

// compare(files, reportJSON) → {tool, files, rows: [{key, measured,
// predicted, error}], cdf: {ttft_ms: {qs, values}, …}} or {error}. files:
// [{name, data: Uint8Array|string|Blob}], a real run's exports (AIPerf,
// vllm bench serve); reportJSON: the prediction it is held against.
func compare(this js.Value, args []js.Value) (result any) {
	defer func() {
		if r := recover(); r != nil {
			result = errResult(panicMessage(r))
		}
	}()
	if len(args) < 2 || args[0].Type() != js.TypeObject {
		return errResult("dynosimCompare: want (files, reportJSON)")
	}
	var files []realFile
	for i := 0; i < args[0].Length(); i++ {
		f := args[0].Index(i)
		name := stringOr(f.Get("name"), fmt.Sprintf("file %d", i+1))
		data, err := bytesOf(f.Get("data"), name, maxTrace)
		if err != nil {
			return errResult(err.Error())
		}
		files = append(files, realFile{name, data})
	}
	report, err := bytesOf(args[1], "report", maxTrace)
	if err != nil {
		return errResult(err.Error())
	}
	out, err := compareRun(files, report)
	if err != nil {
		return errResult(err.Error())
	}
	return js.ValueOf(out)
}
