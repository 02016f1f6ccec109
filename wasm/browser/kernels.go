//go:build js && wasm

package main

import (
	"bytes"
	"compress/gzip"
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

// kernelTables are the tables decoded in this instance, by file name; a
// table is read-only once decoded.
var kernelTables = map[string]*kernels.Table{}

// kernelTableFrom gives sim the tables in req.kernelTables ({name:
// Uint8Array of the .json.gz, or null when the page found none}).
func kernelTableFrom(req js.Value) func(gpu, engine string) (*kernels.Table, error) {
	return func(gpu, engine string) (*kernels.Table, error) {
		name := kernels.FileName(gpu, engine)
		if t, ok := kernelTables[name]; ok {
			return t, nil
		}
		v := req.Get("kernelTables")
		if v.Type() != js.TypeObject || v.Get(name).IsUndefined() {
			return nil, &needKernelTable{name}
		}
		if v.Get(name).IsNull() {
			return nil, nil // not published: no measurements of this GPU and engine
		}
		b := make([]byte, v.Get(name).Length())
		js.CopyBytesToGo(b, v.Get(name))
		// A server may have sent the file with Content-Encoding: gzip, which
		// the browser undid.
		if len(b) > 2 && b[0] == 0x1f && b[1] == 0x8b {
			r, err := gzip.NewReader(bytes.NewReader(b))
			if err != nil {
				return nil, err
			}
			if b, err = io.ReadAll(r); err != nil {
				return nil, err
			}
		}
		t, err := kernels.Decode(b)
		if err != nil {
			return nil, err
		}
		kernelTables[name] = t
		return t, nil
	}
}
