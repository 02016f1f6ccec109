package main

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dynosim/dynosim-web/core/recommend"
	"github.com/dynosim/dynosim-web/core/sim"
)

// fakeWorker answers POST /v1/predict as the DynoSim Worker does
// (wasm/worker/handler.go: one sim.Predict of the posted config, trace and
// sets; a failure is 400 with its reason in X-Dynosim-Reason), counting
// the trials it ran. The first drop posts it closes the connection
// without an answer, as a Worker going away does.
type fakeWorker struct {
	srv         *httptest.Server
	trials      atomic.Int32
	drops, dead atomic.Int32 // connections to drop (dead: every one)
}

func newFakeWorker(t *testing.T) *fakeWorker {
	f := &fakeWorker{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/predict" {
			http.NotFound(w, r)
			return
		}
		if f.dead.Load() > 0 || f.drops.Add(-1) >= 0 {
			if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
				conn.Close()
			}
			return
		}
		_, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
		mr := multipart.NewReader(r.Body, params["boundary"])
		var in sim.Inputs
		for {
			p, err := mr.NextPart()
			if err != nil {
				break
			}
			b, _ := io.ReadAll(p)
			switch p.FormName() {
			case "config":
				in.Config, in.ConfigName = b, p.FileName()
			case "trace":
				in.Trace, in.TraceName = b, p.FileName()
			case "set":
				in.Sets = append(in.Sets, string(b))
			}
		}
		f.trials.Add(1)
		rep, err := sim.Predict(in, nil)
		if err != nil {
			w.Header().Set("X-Dynosim-Reason", recommend.Category(err))
			w.WriteHeader(http.StatusBadRequest)
			b, _ := json.Marshal(map[string]string{"error": err.Error()})
			w.Write(b)
			return
		}
		b, _ := rep.JSON()
		w.Write(b)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// recommendLedger runs recommend on cfg with args and returns its
// recommendation.json.
func recommendLedger(t *testing.T, cfg string, args ...string) []byte {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out")
	var stdout, stderr bytes.Buffer
	if err := run(append([]string{"recommend", "-c", cfg, "--output-dir", out, "--quiet"}, args...), &stdout, &stderr); err != nil {
		t.Fatalf("%v: %v %s", args, err, stderr.String())
	}
	return must(os.ReadFile(filepath.Join(out, "recommendation.json")))
}

// Issue 34 items 3 and 4 (must show): recommend with --parallel 1 and
// --parallel 4, locally and over two Worker URLs (repeated or
// comma-separated --remote), writes byte-identical recommendation.json,
// with trials on both URLs; a URL that drops posts costs retries on the
// other, not a different ledger.
func TestItem34_4RecommendLedgerSameEverywhere(t *testing.T) {
	defer func(b time.Duration) { remoteBackoff = b }(remoteBackoff)
	remoteBackoff = time.Millisecond
	cfg := recConfig(t, t.TempDir(), "")
	want := recommendLedger(t, cfg, "--parallel", "1")
	a, b := newFakeWorker(t), newFakeWorker(t)
	for _, tc := range []struct {
		name      string
		args      []string
		drops     int32 // on a
		dead      bool  // a drops every post
		wantBoth  bool  // both URLs ran trials
		wantAOnly bool
	}{
		{name: "local --parallel 4", args: []string{"--parallel", "4"}},
		{name: "two URLs --parallel 1", args: []string{"--parallel", "1", "--remote", a.srv.URL, "--remote", b.srv.URL}, wantBoth: true},
		{name: "two URLs --parallel 4", args: []string{"--parallel", "4", "--remote", a.srv.URL + "," + b.srv.URL + "/"}, wantBoth: true},
		{name: "one URL drops 3 posts", args: []string{"--parallel", "4", "--remote", a.srv.URL + "," + b.srv.URL}, drops: 3, wantBoth: true},
		{name: "one URL down", args: []string{"--parallel", "2", "--remote", a.srv.URL + "," + b.srv.URL}, dead: true},
		{name: "old single-URL form", args: []string{"--parallel", "2", "--remote", a.srv.URL}, wantAOnly: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a.trials.Store(0)
			b.trials.Store(0)
			a.drops.Store(tc.drops)
			a.dead.Store(0)
			if tc.dead {
				a.dead.Store(1)
			}
			got := recommendLedger(t, cfg, tc.args...)
			if !bytes.Equal(got, want) {
				t.Fatalf("recommendation.json differs from the local --parallel 1 one")
			}
			na, nb := a.trials.Load(), b.trials.Load()
			switch {
			case tc.wantBoth && (na == 0 || nb == 0):
				t.Errorf("trials %d on a, %d on b: want both", na, nb)
			case tc.wantAOnly && (na == 0 || nb != 0):
				t.Errorf("trials %d on a, %d on b: want a only", na, nb)
			case tc.dead && (na != 0 || nb == 0):
				t.Errorf("trials %d on the dead URL, %d on the other", na, nb)
			}
		})
	}
}

// Issue 34 item 4: --remote takes URLs repeated or comma-separated; an
// error names the flag and the bad URL.
func TestItem34_4RemoteFlag(t *testing.T) {
	for _, tc := range []struct {
		values  []string
		want    []string
		wantErr string
	}{
		{[]string{"http://a:1"}, []string{"http://a:1"}, ""},
		{[]string{"http://a:1/", "https://b.example.com"}, []string{"http://a:1", "https://b.example.com"}, ""},
		{[]string{"http://a:1, http://b:2", "http://c:3"}, []string{"http://a:1", "http://b:2", "http://c:3"}, ""},
		{[]string{"http://a:1,ftp://b"}, nil, `--remote: want an http(s) URL of a DynoSim Worker, got "ftp://b"`},
		{[]string{"http://a:1,"}, nil, `--remote: want an http(s) URL of a DynoSim Worker, got ""`},
		{[]string{"http://a:1", "http://a:1/"}, nil, `--remote: "http://a:1/" is given twice`},
	} {
		got, err := parseRemote(tc.values)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || exitCode(err) != 2 {
				t.Errorf("%q: error %v, want %q (exit 2)", tc.values, err, tc.wantErr)
			}
			continue
		}
		if err != nil || strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("%q: %q, %v; want %q", tc.values, got, err, tc.want)
		}
	}
}

// Issue 34 item 4: a trial goes to the least busy URL that has not failed
// last, a retry to one the trial has not tried; one URL gets at most
// remoteAttempts posts of a trial.
func TestItem34_4EndpointsPick(t *testing.T) {
	p, err := newEndpoints([]string{"http://a:1,http://b:2,http://c:3"})
	if err != nil {
		t.Fatal(err)
	}
	none := make([]bool, 3)
	if i, j, k := p.pick(none), p.pick(none), p.pick(none); i+j+k != 3 || i == j || j == k {
		t.Fatalf("three picks %d %d %d: want every URL once", i, j, k)
	}
	p.done(0, failed)
	p.done(1, answered)
	p.done(2, answered)
	if i := p.pick(none); i == 0 {
		t.Fatal("a URL that failed last is picked before healthy ones")
	}
	if i := p.pick([]bool{false, true, true}); i != 0 {
		t.Fatalf("a retry picks %d; want the one URL not tried", i)
	}
	if p.attempts() != remoteAttempts+2 {
		t.Fatalf("attempts %d", p.attempts())
	}
}

// Issue 34 item 4: when no URL answers, the search ends (exit 2) after
// remoteAttempts + URLs − 1 posts, every URL tried, the error naming the
// URL of the last one.
func TestItem34_4RemoteAllDown(t *testing.T) {
	a, b := newFakeWorker(t), newFakeWorker(t)
	a.dead.Store(1)
	b.dead.Store(1)
	code, err := remoteRecommend(t, a.srv.URL+","+b.srv.URL)
	if code != 2 || err == nil {
		t.Fatalf("exit %d, %v", code, err)
	}
	msg := oneLine(err.Error())
	if !strings.Contains(msg, "4 attempts") || !strings.Contains(msg, "--remote http://127.0.0.1:") || strings.Contains(msg, "no feasible") {
		t.Fatalf("error %q: want 4 attempts naming a --remote URL", msg)
	}
}
