// Package public holds the static web page (index.html, scripts, styles,
// sample traces) and, after `make wasm`, the built WebAssembly and the
// copied wasm_exec.js and uPlot. `dynosim serve` serves it from the binary.
package public

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"
)

//go:embed *
var site embed.FS

// FS returns the site's files (Go sources excluded).
func FS() fs.FS { return siteFS{site} }

// Built reports whether the WebAssembly and the copied assets are present,
// i.e. whether `make wasm` ran before the binary was built.
func Built() bool {
	for _, name := range []string{"dynosim.wasm", "ui.wasm", "wasm_exec.js", "vugu-render.js", "uplot/uPlot.iife.min.js"} {
		if _, err := fs.Stat(site, name); err != nil {
			return false
		}
	}
	return true
}

type siteFS struct{ fs.FS }

func (s siteFS) Open(name string) (fs.File, error) {
	if strings.HasSuffix(name, ".go") {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return s.FS.Open(name)
}

// Handler serves the site. Text and wasm files are sent gzip-compressed to
// clients that accept it (precompressed NAME.gz if the build left one, else
// compressed once and cached); sample traces are already gzip files and are
// sent as they are.
//
// Every file carries an ETag (a hash of its content) with "no-cache", so a
// returning browser revalidates and gets 304 Not Modified. Beyond saving the
// download, that lets Chromium reuse the optimised machine code it cached
// for dynosim.wasm: without a validator the module is fetched and compiled
// afresh on each visit, and the first replay runs on baseline code.
func Handler() http.Handler {
	files := http.FileServerFS(FS())
	var cache sync.Map // name → *asset
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Content-Type-Options", "nosniff")
		name := strings.TrimPrefix(path.Clean("/"+r.URL.Path), "/")
		if name == "" {
			name = "index.html"
		}
		a, ok := load(&cache, name)
		if !ok { // a directory or a missing file
			files.ServeHTTP(w, r)
			return
		}
		body, tag := a.raw, a.tag
		if compressible(name) {
			h.Set("Content-Type", contentType(name)) // ServeContent would sniff the gzip bytes
			h.Add("Vary", "Accept-Encoding")
			if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") && r.Method == http.MethodGet && r.Header.Get("Range") == "" {
				h.Set("Content-Encoding", "gzip")
				body, tag = a.gzipped(name), a.tag[:len(a.tag)-1]+`-gz"`
			}
		}
		h.Set("ETag", tag)
		http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(body))
	})
}

// asset is one file of the site, read once.
type asset struct {
	raw  []byte
	tag  string // strong ETag of raw
	once sync.Once
	gz   []byte
}

func load(cache *sync.Map, name string) (*asset, bool) {
	if v, ok := cache.Load(name); ok {
		return v.(*asset), true
	}
	raw, err := fs.ReadFile(FS(), name)
	if err != nil {
		return nil, false
	}
	sum := sha256.Sum256(raw)
	v, _ := cache.LoadOrStore(name, &asset{raw: raw, tag: `"` + hex.EncodeToString(sum[:12]) + `"`})
	return v.(*asset), true
}

// gzipped is the gzip form of the file: `make wasm` leaves NAME.gz (gzip -9)
// beside each .wasm, used as is; anything else is compressed once.
func (a *asset) gzipped(name string) []byte {
	a.once.Do(func() {
		if gz, err := fs.ReadFile(FS(), name+".gz"); err == nil {
			a.gz = gz
			return
		}
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
		zw.Write(a.raw)
		zw.Close()
		a.gz = buf.Bytes()
	})
	return a.gz
}

func compressible(name string) bool {
	switch path.Ext(name) {
	case ".wasm", ".js", ".mjs", ".css", ".html", ".json", ".svg", ".yaml", ".txt":
		return true
	}
	return false
}

func contentType(name string) string {
	switch path.Ext(name) {
	case ".wasm":
		return "application/wasm"
	case ".js", ".mjs":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".html":
		return "text/html; charset=utf-8"
	case ".json":
		return "application/json"
	case ".svg":
		return "image/svg+xml"
	}
	return "text/plain; charset=utf-8"
}
