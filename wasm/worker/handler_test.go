//go:build !(js && wasm)

// The handler tests run natively: under js/wasm the package's syumai/workers
// import needs the Workers runtime context at init.

package main

import (
	"bytes"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/core/sim"
)

const testConfig = `traffic:
  source: {type: trace, format: mooncake, paths: [trace.jsonl], block_size: 512}
engine:
  workers:
    aggregated:
      parallelism: {replicas: 2}
`

type field struct{ name, file, data string }

func multipartBody(t *testing.T, fields ...field) (*bytes.Buffer, string) {
	t.Helper()
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	for _, f := range fields {
		var w interface{ Write([]byte) (int, error) }
		var err error
		if f.file != "" {
			w, err = mw.CreateFormFile(f.name, f.file)
		} else {
			w, err = mw.CreateFormField(f.name)
		}
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(f.data))
	}
	mw.Close()
	return &b, mw.FormDataContentType()
}

func traceSlice(t *testing.T, n int) string {
	t.Helper()
	b, err := os.ReadFile("testdata/conversation_1000.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	return strings.Join(lines[:n], "")
}

func do(t *testing.T, h http.Handler, method, target string, body *bytes.Buffer, ctype string) *httptest.ResponseRecorder {
	t.Helper()
	var req *http.Request
	if body != nil {
		req = httptest.NewRequest(method, target, body)
	} else {
		req = httptest.NewRequest(method, target, nil)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// wantError checks a one-line {"error": ...} answer.
func wantError(t *testing.T, rec *httptest.ResponseRecorder, status int, substr string) {
	t.Helper()
	if rec.Code != status {
		t.Fatalf("status %d, want %d: %s", rec.Code, status, rec.Body)
	}
	body := rec.Body.String()
	if strings.Count(strings.TrimSpace(body), "\n") != 0 {
		t.Errorf("error body is not one line: %q", body)
	}
	var e map[string]string
	if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || len(e) != 1 || e["error"] == "" {
		t.Fatalf("not {\"error\": ...}: %q (%v)", body, err)
	}
	if !strings.Contains(e["error"], substr) {
		t.Errorf("error %q does not mention %q", e["error"], substr)
	}
}

func TestPredictStoresAndServesRuns(t *testing.T) {
	h := NewHandler(newMemStore(), Options{})
	trace := traceSlice(t, 30)
	body, ct := multipartBody(t, field{"config", "config.yaml", testConfig}, field{"trace", "t.jsonl", trace})
	raw := body.Bytes()
	rec := do(t, h, "POST", "/v1/predict", bytes.NewBuffer(raw), ct)
	if rec.Code != 200 {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	loc := rec.Header().Get("Location")
	if !strings.HasPrefix(loc, "/v1/runs/") || !validRunID(strings.TrimPrefix(loc, "/v1/runs/")) {
		t.Fatalf("Location %q", loc)
	}
	if got := rec.Header().Get("X-Dynosim-Cache"); got != "miss" {
		t.Errorf("first run: X-Dynosim-Cache %q", got)
	}
	report := rec.Body.String()

	// Same bytes as a direct sim.Predict on the same inputs.
	rep, err := sim.Predict(sim.Inputs{Config: []byte(testConfig), ConfigName: "config.yaml", Trace: []byte(trace), TraceName: "t.jsonl"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := rep.JSON()
	if strings.TrimRight(report, "\n") != strings.TrimRight(string(want), "\n") {
		t.Error("report differs from sim.Predict's")
	}

	rec = do(t, h, "GET", loc, nil, "")
	if rec.Code != 200 || rec.Body.String() != report {
		t.Fatalf("GET %s: %d, same bytes %v", loc, rec.Code, rec.Body.String() == report)
	}
	rec = do(t, h, "POST", "/v1/predict", bytes.NewBuffer(raw), ct)
	if rec.Code != 200 || rec.Header().Get("X-Dynosim-Cache") != "hit" || rec.Body.String() != report || rec.Header().Get("Location") != loc {
		t.Fatalf("resubmission: %d cache=%q", rec.Code, rec.Header().Get("X-Dynosim-Cache"))
	}
}

// A timeline field adds the request's request_timeline to the same report
// the run gives without it.
func TestPredictTimeline(t *testing.T) {
	h := NewHandler(newMemStore(), Options{})
	trace := traceSlice(t, 30)
	body, ct := multipartBody(t, field{"config", "config.yaml", testConfig}, field{"trace", "t.jsonl", trace}, field{"timeline", "", "4"})
	rec := do(t, h, "POST", "/v1/predict", body, ct)
	if rec.Code != 200 {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	rep, err := sim.Predict(sim.Inputs{Config: []byte(testConfig), ConfigName: "config.yaml", Trace: []byte(trace), TraceName: "t.jsonl", Watch: 4}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := rep.JSON()
	if strings.TrimRight(rec.Body.String(), "\n") != strings.TrimRight(string(want), "\n") || !strings.Contains(string(want), `"request_timeline": {`) {
		t.Error("report differs from sim.Predict's, or has no request_timeline")
	}
}

func TestRunIDCoversEveryInput(t *testing.T) {
	base := inputs{config: []byte("a"), configName: "c.yaml", trace: []byte("t"), traceName: "t.jsonl"}
	ids := map[string]string{}
	add := func(what string, in inputs) {
		id := runID(&in)
		if len(id) != runIDLen || !validRunID(id) {
			t.Fatalf("%s: bad id %q", what, id)
		}
		if prev, ok := ids[id]; ok {
			t.Errorf("%s and %s share run id %s", what, prev, id)
		}
		ids[id] = what
	}
	add("base", base)
	v := base
	v.config = []byte("b")
	add("config", v)
	v = base
	v.traceName = "t.csv"
	add("trace name", v)
	v = base
	v.trace, v.profile = []byte(""), []byte("t") // field boundaries are length-prefixed
	add("moved bytes", v)
	v = base
	v.sets = []string{"x=1"}
	add("set", v)
	v = base
	v.watch = 3
	add("timeline", v)
	old := Version
	Version = "other"
	add("version", base)
	Version = old
	if runID(&base) != runID(&inputs{config: []byte("a"), configName: "c.yaml", trace: []byte("t"), traceName: "t.jsonl"}) {
		t.Error("run id is not a function of the inputs")
	}
}

func TestBadInput(t *testing.T) {
	h := NewHandler(newMemStore(), Options{MaxBodyBytes: 4096, Limits: sim.Limits{MaxRequests: 10}})
	post := func(fields ...field) *httptest.ResponseRecorder {
		body, ct := multipartBody(t, fields...)
		return do(t, h, "POST", "/v1/predict", body, ct)
	}
	trace := field{"trace", "t.jsonl", traceSlice(t, 5)}
	wantError(t, post(field{"config", "", "traffic: ["}, trace), 400, "config.yaml")
	wantError(t, post(field{"config", "mine.yaml", "nope: 1\n"}, trace), 400, "mine.yaml")
	wantError(t, post(field{"config", "", testConfig}, field{"trace", "bad.jsonl", "garbage\n"}), 400, "bad.jsonl:1")
	wantError(t, post(field{"config", "", testConfig}), 400, "upload the trace")
	wantError(t, post(trace), 400, "missing form field config")
	wantError(t, post(field{"config", "", "{}"}, field{"config", "", "{}"}), 400, "twice")
	wantError(t, post(field{"config", "", "{}"}, field{"what", "", "x"}), 400, `"what"`)
	wantError(t, post(field{"config", "", testConfig}, trace, field{"timeline", "", "first"}), 400, "field timeline")
	wantError(t, post(field{"config", "", testConfig}, trace, field{"timeline", "", "9"}), 400, "request 9 does not exist")
	wantError(t, post(field{"config", "", testConfig}, field{"trace", "t.jsonl", traceSlice(t, 11)}), 413, "CLI")
	wantError(t, post(field{"config", "", testConfig}, field{"trace", "t.jsonl", strings.Repeat("x", 5000)}), 413, "4096 bytes")
	wantError(t, do(t, h, "POST", "/v1/predict", bytes.NewBufferString("x: 1"), "application/yaml"), 400, "multipart/form-data")
	wantError(t, do(t, h, "POST", "/v1/predict", bytes.NewBufferString("--B\r\nbroken"), "multipart/form-data; boundary=B"), 400, "multipart")
	wantError(t, do(t, h, "GET", "/v1/predict", nil, ""), 405, "POST")
	wantError(t, do(t, h, "GET", "/v1/runs/0123456789abcdef0123456789abcdef", nil, ""), 404, "unknown run id")
	wantError(t, do(t, h, "GET", "/v1/runs/../../etc", nil, ""), 404, "unknown run id")
	wantError(t, do(t, h, "GET", "/elsewhere", nil, ""), 404, "no such endpoint")
}

func TestHealthAndPreflight(t *testing.T) {
	h := NewHandler(nil, Options{Limits: LimitsForBudget(DefaultCPUBudgetMs)})
	rec := do(t, h, "GET", "/v1/health", nil, "")
	var j map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &j); err != nil || rec.Code != 200 || j["status"] != "ok" || j["storage"] != false {
		t.Fatalf("health: %d %s", rec.Code, rec.Body)
	}
	if j["max_body_bytes"].(float64) != DefaultMaxBodyBytes || j["max_passes"].(float64) <= 0 {
		t.Errorf("health limits: %s", rec.Body)
	}
	rec = do(t, h, "OPTIONS", "/v1/predict", nil, "")
	if rec.Code != 204 || rec.Header().Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("preflight: %d %v", rec.Code, rec.Header())
	}
}
