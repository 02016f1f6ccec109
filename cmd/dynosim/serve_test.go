package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
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
