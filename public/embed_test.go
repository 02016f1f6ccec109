package public

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHandler(t *testing.T) {
	srv := httptest.NewServer(Handler())
	defer srv.Close()

	res, err := http.Get(srv.URL + "/") // the client asks for and undoes gzip
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(body), `id="app"`) {
		t.Fatalf("GET / = %d, %.200s", res.StatusCode, body)
	}

	req, _ := http.NewRequest("GET", srv.URL+"/dynosim.js", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	res, err = http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Header.Get("Content-Encoding") != "gzip" || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/javascript") {
		t.Errorf("dynosim.js headers: %v", res.Header)
	}
	zr, err := gzip.NewReader(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	js, _ := io.ReadAll(zr)
	res.Body.Close()
	if !strings.Contains(string(js), "window.dynosim") {
		t.Errorf("dynosim.js body: %.100s", js)
	}

	for _, p := range []string{"/embed.go", "/traces/nope"} {
		res, err = http.Get(srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 404 {
			t.Errorf("GET %s = %d, want 404", p, res.StatusCode)
		}
	}

	// sample traces are gzip files served as they are
	req, _ = http.NewRequest("GET", srv.URL+"/traces/synthetic_trace.jsonl.gz", nil)
	res, err = http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 || res.Header.Get("Content-Encoding") != "" {
		t.Errorf("sample: %d %v", res.StatusCode, res.Header)
	}
}
