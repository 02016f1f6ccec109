package main

import (
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/public"
)

func TestServiceURL(t *testing.T) {
	for in, want := range map[string]string{
		"":                                     "",
		"  ":                                   "",
		"http://127.0.0.1:8787":                "http://127.0.0.1:8787",
		"https://dynosim.example.workers.dev/": "https://dynosim.example.workers.dev",
		"https://x.example/api/?a=1#f":         "https://x.example/api",
	} {
		got, err := serviceURL(in)
		if err != nil || got != want {
			t.Errorf("serviceURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"dynosim.example", "ftp://x.example", "javascript:alert(1)", "http://", "/v1"} {
		if got, err := serviceURL(in); err == nil {
			t.Errorf("serviceURL(%q) = %q, want an error", in, got)
		}
	}
}

func TestServiceConfigJS(t *testing.T) {
	base := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "static "+r.URL.Path) })
	get := func(h http.Handler, path string) string {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		return rec.Body.String()
	}
	if got := get(withServiceConfig(base, ""), "/config.js"); got != "static /config.js" {
		t.Errorf("no service: /config.js = %q, want the embedded file", got)
	}
	h := withServiceConfig(base, "https://x.example/</script>")
	got := get(h, "/config.js")
	if !strings.Contains(got, `window.DYNOSIM_SERVICE_URL = "https://x.example/\u003c/script\u003e";`) {
		t.Errorf("/config.js = %q", got)
	}
	if got := get(h, "/index.html"); got != "static /index.html" {
		t.Errorf("/index.html = %q", got)
	}
}

func TestServeSecurityHeaders(t *testing.T) {
	base := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "static "+r.URL.Path) })
	for _, h := range []http.Handler{withSecurityHeaders(withServiceConfig(base, "")), withSecurityHeaders(withServiceConfig(base, "https://x.example"))} {
		for _, path := range []string{"/", "/index.html", "/config.js", "/dynosim.wasm", "/missing"} {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
			hd := rec.Result().Header
			csp := hd.Get("Content-Security-Policy")
			for _, want := range []string{"default-src 'self'", "script-src 'self' 'wasm-unsafe-eval';", "worker-src 'self'", "object-src 'none'", "frame-ancestors *"} {
				if !strings.Contains(csp, want) {
					t.Errorf("%s: Content-Security-Policy %q lacks %q", path, csp, want)
				}
			}
			for _, bad := range []string{"'unsafe-eval'", "script-src 'self' 'wasm-unsafe-eval' 'unsafe-inline'"} {
				if strings.Contains(csp, bad) {
					t.Errorf("%s: Content-Security-Policy %q has %q", path, csp, bad)
				}
			}
			if got := hd.Get("Referrer-Policy"); got != "no-referrer" {
				t.Errorf("%s: Referrer-Policy = %q", path, got)
			}
			if got := hd.Get("X-Content-Type-Options"); got != "nosniff" {
				t.Errorf("%s: X-Content-Type-Options = %q", path, got)
			}
			if hd.Get("X-Frame-Options") != "" {
				t.Errorf("%s: X-Frame-Options would break embed.js", path)
			}
		}
	}
}

// TestPageHasNoInlineScript: the CSP allows only the site's own script files.
func TestPageHasNoInlineScript(t *testing.T) {
	b, err := fs.ReadFile(public.FS(), "index.html")
	if err != nil {
		t.Fatal(err)
	}
	for _, tag := range regexp.MustCompile(`<script[^>]*>`).FindAllString(string(b), -1) {
		if !strings.Contains(tag, " src=") {
			t.Errorf("index.html has an inline script (%s): the Content-Security-Policy blocks it", tag)
		}
	}
	if regexp.MustCompile(`\son[a-z]+=`).Match(b) {
		t.Error("index.html has an inline event handler: the Content-Security-Policy blocks it")
	}
}

// A binary built without the page's WebAssembly (a bare `go run
// ./cmd/dynosim serve`) answers the page with what to run instead of a
// page stuck loading; other files are still served.
func TestServeNotBuilt(t *testing.T) {
	base := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "static "+r.URL.Path) })
	h := notBuiltPage(base)
	for _, path := range []string{"/", "/index.html"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "<code>make serve</code>") {
			t.Errorf("%s: %d %q", path, rec.Code, rec.Body.String())
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/app.js", nil))
	if rec.Body.String() != "static /app.js" {
		t.Errorf("/app.js = %q", rec.Body.String())
	}
}
