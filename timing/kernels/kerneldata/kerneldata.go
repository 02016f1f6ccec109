// Package kerneldata embeds the compiled kernel tables (timing/kernels;
// provenance and licence in README.md and LICENSE beside them). Only
// front ends that ship the tables inside their binary import it (the CLI);
// the page and the Worker fetch the same files instead, which keeps them
// out of the size-budgeted wasm.
package kerneldata

import (
	"bytes"
	"compress/gzip"
	"embed"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"sync"

	"github.com/dynosim/dynosim-web/timing/kernels"
)

//go:embed *.json.gz
var files embed.FS

// Table returns the uncompressed table of gpu under engine; ok is false
// when none was compiled.
func Table(gpu, engine string) (b []byte, ok bool, err error) {
	z, err := files.ReadFile(kernels.FileName(gpu, engine))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	b, err = Gunzip(z)
	if err != nil {
		return nil, false, fmt.Errorf("%s: %v", kernels.FileName(gpu, engine), err)
	}
	return b, true, nil
}

// Gunzip decompresses one table file into a buffer sized once from the
// gzip trailer's uncompressed length (RFC 1952 ISIZE), not grown by
// doubling from 512 bytes; the bytes are the same.
func Gunzip(z []byte) ([]byte, error) {
	r, err := gzip.NewReader(bytes.NewReader(z))
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if size := binary.LittleEndian.Uint32(z[len(z)-4:]); size <= 256<<20 { // NewReader read a header: len(z) > 4
		buf.Grow(int(size) + bytes.MinRead) // ReadFrom wants MinRead free to read EOF
	}
	_, err = buf.ReadFrom(r)
	return buf.Bytes(), err
}

// Names lists the embedded table files.
func Names() []string {
	es, _ := files.ReadDir(".")
	var ns []string
	for _, e := range es {
		ns = append(ns, e.Name())
	}
	return ns
}

var (
	mu     sync.Mutex
	loaded = map[string]*kernels.Table{}
)

// Load returns the decoded table of gpu under engine, nil when none was
// compiled. Tables are decoded once and shared: they are read-only.
func Load(gpu, engine string) (*kernels.Table, error) {
	mu.Lock()
	defer mu.Unlock()
	name := kernels.FileName(gpu, engine)
	if t, ok := loaded[name]; ok {
		return t, nil
	}
	b, ok, err := Table(gpu, engine)
	if err != nil || !ok {
		return nil, err
	}
	t, err := kernels.Decode(b)
	if err != nil {
		return nil, err
	}
	loaded[name] = t
	return t, nil
}
