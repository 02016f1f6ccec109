//go:build js && wasm

// Command browser is the simulator's entry point inside a Web Worker. It is
// glue only: it registers dynosimPredict on the worker's global object, turns
// the JavaScript arguments into sim.Inputs, forwards progress to the worker
// script at a bounded rate and returns the report JSON or a one-line error.
//
// Cancel is done by the page: it terminates the Worker (Go wasm cannot yield
// while Predict runs) and starts a fresh one.
package main

import (
	"fmt"
	"syscall/js"
	"time"

	"github.com/dynosim/dynosim-web/core/sim"
)

// progressEvery bounds the rate of progress messages (wall time); the page
// paints progress four times a second.
const progressEvery = 250 * time.Millisecond

func main() {
	js.Global().Set("dynosimPredict", js.FuncOf(predict))
	js.Global().Set("dynosimValidate", js.FuncOf(validate))
	js.Global().Set("dynosimRequests", js.FuncOf(takeRequests))
	js.Global().Set("dynosimRecommendParse", js.FuncOf(recommendParse))
	js.Global().Set("dynosimRecommend", js.FuncOf(recommendRun))
	js.Global().Set("dynosimCandidateYAML", js.FuncOf(candidateYAML))
	js.Global().Set("dynosimCompare", js.FuncOf(compare))
	if ready := js.Global().Get("dynosimReady"); ready.Type() == js.TypeFunction {
		ready.Invoke()
	}
	select {}
}

// predict(req, onProgress) → {json, table, requests} or {error}.
// req: {config: string, configName, trace: Uint8Array|string, traceName,
// profile: Uint8Array, profileName, model: an HF config.json standing for
// engine.model, modelName, capturePerRequest: bool, watch: a request's uuid
// whose life the report's request_timeline records, lazyRequests: bool
// (see takeRequests)}. With req.sets (an
// array of PATH=VALUE) it is a recommend trial: see predictTrial.
func predict(this js.Value, args []js.Value) (result any) {
	defer func() {
		if r := recover(); r != nil {
			result = errResult(panicMessage(r))
		}
	}()
	if len(args) < 1 {
		return errResult("dynosimPredict: missing request")
	}
	req := args[0]
	var onProgress js.Value
	if len(args) > 1 && args[1].Type() == js.TypeFunction {
		onProgress = args[1]
	}
	in := sim.Inputs{
		ConfigName:        stringOr(req.Get("configName"), "config.yaml"),
		TraceName:         stringOr(req.Get("traceName"), "trace.jsonl"),
		ProfileName:       stringOr(req.Get("profileName"), "profile.npz"),
		ModelConfigName:   stringOr(req.Get("modelName"), "config.json"),
		CapturePerRequest: req.Get("capturePerRequest").Truthy(),
		KernelTable:       kernelTable, // timing.kernels: aic (kernels.go)
	}
	if err := takeKernelTables(req); err != nil {
		return errResult(err.Error())
	}
	if w := req.Get("watch"); w.Type() == js.TypeNumber {
		// (a uuid beyond 2^53 cannot come from JavaScript as a number)
		if f := w.Float(); f >= 1 && f <= 1<<53 && f == float64(uint64(f)) {
			in.Watch = uint64(f)
		} else {
			return errResult(fmt.Sprintf("watch: want a request uuid (a whole number ≥ 1), got %v", f))
		}
	}
	if req.Get("sets").Type() == js.TypeObject {
		// a trial of a recommend search (see predictTrial)
		res, err := predictTrial(req, in, nil)
		if err != nil {
			return errResult(err.Error())
		}
		return res
	}
	var err error
	if in.Config, err = bytesOf(req.Get("config"), in.ConfigName, maxConfig); err != nil {
		return errResult(err.Error())
	}
	if in.Trace, err = bytesOf(req.Get("trace"), in.TraceName, maxTrace); err != nil {
		return errResult(err.Error())
	}
	if in.Profile, err = bytesOf(req.Get("profile"), in.ProfileName, maxProfile); err != nil {
		return errResult(err.Error())
	}
	if in.ModelConfig, err = bytesOf(req.Get("model"), in.ModelConfigName, maxConfig); err != nil {
		return errResult(err.Error())
	}

	keepRequests(nil) // an earlier run's records that nobody took
	start := time.Now()
	last := start
	var cb func(sim.Progress) bool
	var latest sim.Progress
	if onProgress.Truthy() {
		cb = func(p sim.Progress) bool {
			latest = p
			now := time.Now()
			if now.Sub(last) < progressEvery {
				return true
			}
			last = now
			onProgress.Invoke(p.SimTimeMs, p.Done, p.Total, float64(now.Sub(start))/1e6, "simulate")
			return true
		}
	}
	rep, err := sim.Predict(in, cb)
	if need := needTable(err); need != nil {
		return need
	}
	if err != nil {
		return errResult(err.Error())
	}
	if onProgress.Truthy() {
		// the replay is over; the page says the report is being built
		// (issue 32 item 8)
		onProgress.Invoke(latest.SimTimeMs, latest.Total, latest.Total, float64(time.Since(start))/1e6, "report")
	}
	rep.SetWallTime(float64(time.Since(start).Microseconds()) / 1000)
	out, err := rep.JSON()
	if err != nil {
		return errResult(err.Error())
	}
	res := map[string]any{"json": string(out), "table": rep.Table()}
	if in.CapturePerRequest {
		if req.Get("lazyRequests").Truthy() {
			keepRequests(rep)
			res["requestsPending"] = true
		} else {
			res["requests"] = string(rep.RequestsJSONL())
		}
	}
	return js.ValueOf(res)
}

func errResult(msg string) js.Value {
	return js.ValueOf(map[string]any{"error": oneLine(msg)})
}

// blobChunk is how much of a Blob is read at a time.
const blobChunk = 4 << 20

// bytesOf copies a Uint8Array, ArrayBuffer, string or Blob (File) into Go
// memory once, or fails if it is over limit bytes (what names it). A Blob is
// read in chunks with FileReaderSync, so a dropped file goes from disk to Go
// memory without a whole copy on the JS heap.
func bytesOf(v js.Value, what string, limit int) ([]byte, error) {
	switch v.Type() {
	case js.TypeString:
		// A JS string is at most 2^29 UTF-16 units in V8: safe to convert
		// before checking.
		b := []byte(v.String())
		return b, checkSize(what, len(b), limit)
	case js.TypeObject:
		if blob := js.Global().Get("Blob"); blob.Truthy() && v.InstanceOf(blob) {
			size := v.Get("size").Int()
			if err := checkSize(what, size, limit); err != nil {
				return nil, err
			}
			b := make([]byte, size)
			reader := js.Global().Get("FileReaderSync").New()
			u8 := js.Global().Get("Uint8Array")
			for off := 0; off < size; off += blobChunk {
				end := min(off+blobChunk, size)
				buf := reader.Call("readAsArrayBuffer", v.Call("slice", off, end))
				js.CopyBytesToGo(b[off:end], u8.New(buf))
			}
			return b, nil
		}
		if v.InstanceOf(js.Global().Get("ArrayBuffer")) {
			v = js.Global().Get("Uint8Array").New(v)
		}
		n := v.Get("length").Int()
		if err := checkSize(what, n, limit); err != nil {
			return nil, err
		}
		b := make([]byte, n)
		js.CopyBytesToGo(b, v)
		return b, nil
	}
	return nil, nil
}

func stringOr(v js.Value, def string) string {
	if v.Type() == js.TypeString && v.String() != "" {
		return v.String()
	}
	return def
}
