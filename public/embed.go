// Package public holds the static web page (index.html, scripts, styles,
// sample traces) and, after `make wasm`, the built WebAssembly and the
// copied wasm_exec.js and uPlot. `dynosim serve` serves it from the binary.
package public

import (
	"bytes"
	"compress/gzip"
	"embed"
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
	for _, name := range []string{"dynosim.wasm", "ui.wasm", "wasm_exec.js", "uplot/uPlot.iife.min.js"} {
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
func Handler() http.Handler {
	files := http.FileServerFS(FS())
	var cache sync.Map // name → []byte (gzip)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Content-Type-Options", "nosniff")
		name := strings.TrimPrefix(path.Clean("/"+r.URL.Path), "/")
		if name == "" {
			name = "index.html"
		}
		if strings.HasSuffix(name, ".wasm") {
			h.Set("Content-Type", "application/wasm")
		}
		if compressible(name) && strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") && r.Method == http.MethodGet && r.Header.Get("Range") == "" {
			if gz, ok := gzipped(&cache, name); ok {
				h.Set("Content-Encoding", "gzip")
				h.Add("Vary", "Accept-Encoding")
				if ct := contentType(name); ct != "" {
					h.Set("Content-Type", ct)
				}
				http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(gz))
				return
			}
		}
		files.ServeHTTP(w, r)
	})
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

func gzipped(cache *sync.Map, name string) ([]byte, bool) {
	if v, ok := cache.Load(name); ok {
		return v.([]byte), true
	}
	// `make wasm` leaves NAME.gz (gzip -9) beside each .wasm: use it as is.
	if gz, err := fs.ReadFile(FS(), name+".gz"); err == nil {
		cache.Store(name, gz)
		return gz, true
	}
	data, err := fs.ReadFile(FS(), name)
	if err != nil {
		return nil, false
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	zw.Write(data)
	zw.Close()
	cache.Store(name, buf.Bytes())
	return buf.Bytes(), true
}
