package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/dynosim/dynosim-web/public"
)

// runServe implements `dynosim serve [--addr 127.0.0.1:8080] [--service-url URL]`:
// it serves the web page embedded in the binary (package public). It prints
// the URL it listens on (useful with --addr 127.0.0.1:0) and serves until
// killed. With --service-url (or $DYNOSIM_SERVICE_URL) the page offers "Run
// on the shared service" (the Cloudflare Worker of docs/worker.md).
func runServe(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8080", "listen `ADDRESS` (host:port; port 0 picks a free one)")
	service := fs.String("service-url", os.Getenv("DYNOSIM_SERVICE_URL"),
		"offer \"Run on the shared service\" on the page, sending runs to the DynoSim Worker at `URL` (default $DYNOSIM_SERVICE_URL; empty: off)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("serve: unexpected argument %q", fs.Arg(0))}
	}
	svc, err := serviceURL(*service)
	if err != nil {
		return usageError{err}
	}
	site := public.Handler()
	if !public.Built() {
		fmt.Fprintln(os.Stderr, "dynosim: warning: "+notBuilt)
		site = notBuiltPage(site)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	fmt.Printf("dynosim: serving the web page on http://%s/\n", ln.Addr())
	if svc != "" {
		fmt.Printf("dynosim: the page offers runs on the shared service %s\n", svc)
	}
	srv := &http.Server{Handler: withSecurityHeaders(withServiceConfig(site, svc)), ReadHeaderTimeout: 10 * time.Second}
	return srv.Serve(ln)
}

const notBuilt = "the page's WebAssembly is not built into this binary (a plain `go build` or `go run` does not build it); run `make serve`, or `make wasm` before building"

// notBuiltPage answers the page itself with what to do instead of a page
// that would wait for its WebAssembly forever; other files are served.
func notBuiltPage(site http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" && r.URL.Path != "/index.html" {
			site.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintf(w, "<!doctype html><html lang=\"en\"><meta charset=\"utf-8\"><title>DynoSim: page not built</title><h1>DynoSim: the page is not built</h1><p>%s.</p></html>\n",
			strings.NewReplacer("`make serve`", "<code>make serve</code>", "`make wasm`", "<code>make wasm</code>", "`go build`", "<code>go build</code>", "`go run`", "<code>go run</code>").Replace(notBuilt))
	})
}

// serviceURL checks a --service-url value: empty (off) or an absolute http(s)
// URL, returned without a trailing slash, query or fragment.
func serviceURL(raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return "", nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("serve: --service-url %q: want an absolute http(s) URL such as https://dynosim.example.workers.dev", raw)
	}
	u.RawQuery, u.Fragment = "", ""
	return strings.TrimRight(u.String(), "/"), nil
}

// contentSecurityPolicy is sent with every file `serve` answers. The page
// runs only its own scripts (no inline script, no eval: app.js loads vugu's
// DOM helper from vugu-render.js instead of letting vugu eval it) and its own
// workers, compiles WebAssembly ('wasm-unsafe-eval', for ui.wasm and
// dynosim.wasm), and may be framed from any origin (embed.js). connect-src
// allows any http(s) origin: the shared service may be chosen per page with
// ?service=URL (docs/web.md). Inline style attributes are allowed: Vugu and
// uPlot set them.
const contentSecurityPolicy = "default-src 'self'; " +
	"script-src 'self' 'wasm-unsafe-eval'; worker-src 'self'; " +
	"style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; " +
	"connect-src 'self' http: https:; object-src 'none'; base-uri 'self'; form-action 'none'; " +
	"frame-ancestors *"

// withSecurityHeaders adds the Content-Security-Policy, Referrer-Policy and
// X-Content-Type-Options headers to every answer.
func withSecurityHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", contentSecurityPolicy)
		hd.Set("Referrer-Policy", "no-referrer")
		hd.Set("X-Content-Type-Options", "nosniff")
		h.ServeHTTP(w, r)
	})
}

// withServiceConfig answers /config.js with the service URL (the page reads
// window.DYNOSIM_SERVICE_URL) when one is set; otherwise the embedded
// config.js, which sets nothing, is served.
func withServiceConfig(h http.Handler, svc string) http.Handler {
	if svc == "" {
		return h
	}
	q, _ := json.Marshal(svc)
	body := []byte("// written by `dynosim serve --service-url`\nwindow.DYNOSIM_SERVICE_URL = " + string(q) + ";\n")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/config.js" {
			h.ServeHTTP(w, r)
			return
		}
		hd := w.Header()
		hd.Set("Content-Type", "text/javascript; charset=utf-8")
		hd.Set("Cache-Control", "no-cache")
		hd.Set("X-Content-Type-Options", "nosniff")
		w.Write(body)
	})
}
