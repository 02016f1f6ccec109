//go:build js && wasm

package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"sync"
	"syscall/js"
	"time"

	"github.com/dynosim/dynosim-web/timing/kernels"
)

// AssetsBinding is the Workers static-assets binding that holds the kernel
// tables of `timing.kernels: aic` (build/wrangler.jsonc; `make worker`
// copies timing/kernels/kerneldata/*.json.gz to its kernels/ directory).
// The tables stay out of app.wasm, whose gzip'd upload has a 3 MiB budget.
const AssetsBinding = "ASSETS"

// assetKernelTable fetches a run's kernel table from the assets binding on
// first use and keeps it decoded for this isolate's later runs (a table is
// read-only). A table the assets do not hold is none: the run is refused
// naming timing.kernels, as in the CLI.
func assetKernelTable(assets js.Value) func(gpu, engine string) (*kernels.Table, error) {
	var mu sync.Mutex
	cache := map[string]*kernels.Table{}
	return func(gpu, engine string) (*kernels.Table, error) {
		name := kernels.FileName(gpu, engine)
		mu.Lock()
		defer mu.Unlock()
		if t, ok := cache[name]; ok {
			return t, nil
		}
		resp, err := await(assets.Call("fetch", "https://assets.invalid/kernels/"+name), 30*time.Second)
		if err != nil {
			return nil, fmt.Errorf("kernel table %s: %v", name, err)
		}
		switch status := resp.Get("status").Int(); {
		case status == 404:
			cache[name] = nil
			return nil, nil
		case status != 200:
			return nil, fmt.Errorf("kernel table %s: HTTP %d", name, status)
		}
		buf, err := await(resp.Call("arrayBuffer"), 30*time.Second)
		if err != nil {
			return nil, fmt.Errorf("kernel table %s: %v", name, err)
		}
		u := js.Global().Get("Uint8Array").New(buf)
		b := make([]byte, u.Length())
		js.CopyBytesToGo(b, u)
		if len(b) > 2 && b[0] == 0x1f && b[1] == 0x8b { // not undone by the runtime
			r, err := gzip.NewReader(bytes.NewReader(b))
			if err != nil {
				return nil, fmt.Errorf("kernel table %s: %v", name, err)
			}
			if b, err = io.ReadAll(r); err != nil {
				return nil, fmt.Errorf("kernel table %s: %v", name, err)
			}
		}
		t, err := kernels.Decode(b)
		if err != nil {
			return nil, err
		}
		cache[name] = t
		return t, nil
	}
}
