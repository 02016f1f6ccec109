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

// Files carry strong ETags (one per encoding) so a returning browser gets
// 304 Not Modified and keeps its compiled wasm.
func TestHandlerRevalidates(t *testing.T) {
	srv := httptest.NewServer(Handler())
	defer srv.Close()
	for _, tc := range []struct {
		path, encoding, wantType string
	}{
		{"/dynosim.js", "gzip", "text/javascript; charset=utf-8"},
		{"/dynosim.js", "identity", "text/javascript; charset=utf-8"},
		{"/traces/synthetic_trace.jsonl.gz", "gzip", "application/gzip"},
	} {
		get := func(etag string) *http.Response {
			req, _ := http.NewRequest("GET", srv.URL+tc.path, nil)
			req.Header.Set("Accept-Encoding", tc.encoding)
			if etag != "" {
				req.Header.Set("If-None-Match", etag)
			}
			res, err := http.DefaultTransport.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			return res
		}
		first := get("")
		tag := first.Header.Get("ETag")
		if first.StatusCode != 200 || !strings.HasPrefix(tag, `"`) || first.Header.Get("Content-Type") != tc.wantType {
			t.Fatalf("GET %s (%q): %d, ETag %q, Content-Type %q", tc.path, tc.encoding, first.StatusCode, tag, first.Header.Get("Content-Type"))
		}
		if again := get(tag); again.StatusCode != http.StatusNotModified {
			t.Errorf("GET %s (%q) with If-None-Match %s: %d, want 304", tc.path, tc.encoding, tag, again.StatusCode)
		}
		if stale := get(`"0000"`); stale.StatusCode != 200 {
			t.Errorf("GET %s (%q) with a stale ETag: %d, want 200", tc.path, tc.encoding, stale.StatusCode)
		}
	}
	// the two encodings of one file have different tags
	plain, _ := http.NewRequest("GET", srv.URL+"/dynosim.js", nil)
	plain.Header.Set("Accept-Encoding", "identity")
	zipped, _ := http.NewRequest("GET", srv.URL+"/dynosim.js", nil)
	zipped.Header.Set("Accept-Encoding", "gzip")
	var tags []string
	for _, req := range []*http.Request{plain, zipped} {
		res, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		tags = append(tags, res.Header.Get("ETag"))
	}
	if tags[0] == tags[1] {
		t.Errorf("identity and gzip share ETag %s", tags[0])
	}
}
