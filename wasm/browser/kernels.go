//go:build js && wasm

package main

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"syscall/js"

	"github.com/dynosim/dynosim-web/timing/kernels"
)

// needKernelTable is the error a run stops with when its config names
// `timing.kernels: aic` and the page has not fetched the table yet:
// predict answers {needKernelTable: name} and sim-worker.js fetches
// kernels/<name> (the files timing/kernels/kerneldata embeds in the CLI,
// copied to public/ by `make wasm`) and asks again. The page thus loads
// only the table a config needs, and the wasm carries none.
type needKernelTable struct{ name string }

func (e *needKernelTable) Error() string { return "kernel table " + e.name + " is not loaded" }

// kernelTables are the tables decoded in this instance, by file name (nil:
// the page found none published); a table is read-only once decoded. They
// outlive the request that brought them: a recommend trial worker keeps
// its prepared sweep (recommend.go) across trials, and each later trial
// of that search finds its table here without fetching it again.
var kernelTables = map[string]*kernels.Table{}

// takeKernelTables decodes the tables in req.kernelTables ({name:
// Uint8Array of the .json.gz, or null when the page found none}) that this
// instance has not decoded yet.
func takeKernelTables(req js.Value) error {
	v := req.Get("kernelTables")
	if v.Type() != js.TypeObject {
		return nil
	}
	names := js.Global().Get("Object").Call("keys", v)
	for i := range names.Length() {
		name := names.Index(i).String()
		if _, ok := kernelTables[name]; ok {
			continue
		}
		if v.Get(name).IsNull() {
			kernelTables[name] = nil // not published: no measurements of this GPU and engine
			continue
		}
		b := make([]byte, v.Get(name).Length())
		js.CopyBytesToGo(b, v.Get(name))
		// A server may have sent the file with Content-Encoding: gzip, which
		// the browser undid.
		if len(b) > 2 && b[0] == 0x1f && b[1] == 0x8b {
			r, err := gzip.NewReader(bytes.NewReader(b))
			if err != nil {
				return fmt.Errorf("kernel table %s: %v", name, err)
			}
			if b, err = io.ReadAll(r); err != nil {
				return fmt.Errorf("kernel table %s: %v", name, err)
			}
		}
		t, err := kernels.Decode(b)
		if err != nil {
			return fmt.Errorf("kernel table %s: %v", name, err)
		}
		kernelTables[name] = t
	}
	return nil
}

// kernelTable is sim.Inputs.KernelTable in the page: a table decoded
// here, or needKernelTable so that sim-worker.js fetches it and asks again.
func kernelTable(gpu, engine string) (*kernels.Table, error) {
	name := kernels.FileName(gpu, engine)
	if t, ok := kernelTables[name]; ok {
		return t, nil
	}
	return nil, &needKernelTable{name}
}

// needTable is the answer that makes sim-worker.js fetch the table err
// asks for, or nil when err is another error.
func needTable(err error) any {
	if need := (*needKernelTable)(nil); errors.As(err, &need) {
		return js.ValueOf(map[string]any{"needKernelTable": need.name})
	}
	return nil
}
