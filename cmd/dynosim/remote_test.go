package main

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dynosim/dynosim-web/core/recommend"
	"github.com/dynosim/dynosim-web/core/sim"
	"github.com/dynosim/dynosim-web/internal/patience"
)

// TestRemoteRetriesTransportFaults: a connection the Worker side drops
// before answering costs one more post, not a failed candidate; an HTTP
// answer (the Worker's verdict) is never posted again.
func TestRemoteRetriesTransportFaults(t *testing.T) {
	for _, tc := range []struct {
		name      string
		drops     int32 // connections dropped before an answer
		status    int
		wantPosts int32
		wantErr   bool
	}{
		{"one dropped connection", 1, http.StatusOK, 2, false},
		{"every attempt dropped", remoteAttempts, http.StatusOK, remoteAttempts, true},
		{"a refusal is final", 0, http.StatusUnprocessableEntity, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var posts atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				if n := posts.Add(1); n <= tc.drops {
					conn, _, err := w.(http.Hijacker).Hijack()
					if err == nil {
						conn.Close()
					}
					return
				}
				if tc.status != http.StatusOK {
					w.Header().Set("X-Dynosim-Reason", recommend.ReasonRuntime)
					w.WriteHeader(tc.status)
					w.Write([]byte(`{"error":"no"}`))
					return
				}
				w.Write([]byte(`{}`))
			}))
			defer srv.Close()
			r, err := newRemote([]string{srv.URL}, "c.yaml", []byte("traffic: {source: {type: synthetic}}\n"), sim.Inputs{}, 1, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			rep, _, err := r.Predict(nil)
			if got := posts.Load(); got != tc.wantPosts {
				t.Errorf("posts = %d, want %d", got, tc.wantPosts)
			}
			if (err != nil) != tc.wantErr || (err == nil) != (rep != nil) {
				t.Errorf("Predict: report %v, err %v; want error %v", rep != nil, err, tc.wantErr)
			}
		})
	}
}

// remoteRecommend runs `dynosim recommend --remote url` in process on a
// two-candidate synthetic search, with retries that do not wait, and
// returns its exit status and error; it fails t if the command does not
// return by the test's deadline.
func remoteRecommend(t *testing.T, url string, flags ...string) (int, error) {
	t.Helper()
	defer func(b time.Duration) { remoteBackoff = b }(remoteBackoff)
	remoteBackoff = time.Millisecond
	cfg := write(t, t.TempDir(), "rec.yaml", "traffic: {source: {type: synthetic}, stop: {requests: 20}}\nrouter: {policy: {choices: [round_robin, kv_router]}}\n")
	args := append([]string{"recommend", "-c", cfg, "--remote", url, "--quiet", "--parallel", "1", "--output-dir", filepath.Join(t.TempDir(), "out")}, flags...)
	done := make(chan error, 1)
	go func() {
		var stdout, stderr bytes.Buffer
		done <- run(args, &stdout, &stderr)
	}()
	select {
	case err := <-done:
		if err == nil {
			return 0, nil
		}
		return exitCode(err), err
	case <-patience.After(t):
		t.Fatalf("recommend --remote %s %v did not return", url, flags)
	}
	return 0, nil
}

// wantUnavailable checks a search ended on its service: exit 2, naming
// the URL and the cause, not "no feasible candidate".
func wantUnavailable(t *testing.T, err error, code int, url string, cause ...string) {
	t.Helper()
	var u *recommend.Unavailable
	msg := ""
	if err != nil {
		msg = oneLine(err.Error())
	}
	if code != 2 || !errors.As(err, &u) || !strings.Contains(msg, "--remote "+url+"/v1/predict: ") || strings.Contains(msg, "no feasible") {
		t.Fatalf("exit %d: %s; want exit 2 naming --remote %s/v1/predict", code, msg, url)
	}
	for _, c := range cause {
		if !strings.Contains(msg, c) {
			t.Fatalf("error %q does not say %q", msg, c)
		}
	}
}

// Issue 29 item 13: a --remote answering 200 with a body without end
// made the CLI read 256 MiB per trial (1.2 GB RSS at --parallel 2, more
// at a larger one) and call each candidate failed. An answer is now read
// up to maxRemoteAnswer and the search ends with that error, exit 2.
func TestItem13RemoteEndlessBody(t *testing.T) {
	var posts atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		posts.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"summary":{"x":`))
		chunk := bytes.Repeat([]byte("1"), 1<<16)
		for r.Context().Err() == nil { // until the client hangs up
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	code, err := remoteRecommend(t, srv.URL)
	wantUnavailable(t, err, code, srv.URL, "the answer is over 64 MiB")
	if n := posts.Load(); n != 1 {
		t.Fatalf("%d posts; an oversized answer is not posted again, nor a second trial started", n)
	}
}

// Issue 29 item 13: a --remote that accepts the trial and never answers
// held each trial 10 minutes (the client's fixed timeout), one after
// another. A trial now ends at --remote-timeout, every attempt included,
// and that ends the search (exit 2).
func TestItem13RemoteNeverAnswers(t *testing.T) {
	var posts atomic.Int32
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		posts.Add(1)
		io.Copy(io.Discard, r.Body)
		select { // never answers
		case <-r.Context().Done(): // the client gave up
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	code, err := remoteRecommend(t, srv.URL, "--remote-timeout", "200ms")
	wantUnavailable(t, err, code, srv.URL, "no answer within 200ms (--remote-timeout; 1 attempt)")
	if n := posts.Load(); n != 1 {
		t.Fatalf("%d posts, want 1: the deadline is the trial's, and no trial starts after it", n)
	}
}

// Issue 29 item 13: an unreachable --remote exited 1 with "no feasible
// candidate" (every trial a failed candidate). It is now a connection
// error naming the URL, exit 2, after the bounded retries.
func TestItem13RemoteUnreachableExit2(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close() // a closed port: connection refused
	code, err := remoteRecommend(t, url)
	wantUnavailable(t, err, code, url, "3 attempts", "connection refused")
	if strings.Count(oneLine(err.Error()), url) != 1 {
		t.Fatalf("error %q repeats the URL", err)
	}
}

// Issue 29 item 13: what the Worker answers decides whether a trial is
// posted again and whether the search goes on: a proxy's 503 is posted
// again and then ends the search; a 404 is no Worker; a 200 that is not a
// report is no Worker; the Worker's 400 is the candidate's verdict.
func TestItem13RemoteAnswers(t *testing.T) {
	for _, tc := range []struct {
		name        string
		status      int
		body        string
		wantPosts   int32
		unavailable string // "" : a candidate's verdict
	}{
		{"503 every time", http.StatusServiceUnavailable, "busy", remoteAttempts, "3 attempts: HTTP 503: busy"},
		{"404", http.StatusNotFound, "no such endpoint", 1, "HTTP 404 (no such endpoint): not a DynoSim Worker"},
		{"200 not a report", http.StatusOK, "<html>hello</html>", 1, "the answer is not a DynoSim report"},
		{"400 verdict", http.StatusBadRequest, `{"error":"engine: no"}`, 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func(b time.Duration) { remoteBackoff = b }(remoteBackoff)
			remoteBackoff = time.Millisecond
			var posts atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				posts.Add(1)
				w.WriteHeader(tc.status)
				w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			r, err := newRemote([]string{srv.URL}, "c.yaml", []byte("traffic: {source: {type: synthetic}}\n"), sim.Inputs{}, 1, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = r.Predict(nil)
			var u *recommend.Unavailable
			if got := posts.Load(); got != tc.wantPosts {
				t.Errorf("posts = %d, want %d", got, tc.wantPosts)
			}
			switch {
			case err == nil:
				t.Fatal("no error")
			case tc.unavailable == "" && errors.As(err, &u):
				t.Fatalf("a verdict made the service unavailable: %v", err)
			case tc.unavailable != "" && (!errors.As(err, &u) || !strings.Contains(err.Error(), tc.unavailable)):
				t.Fatalf("error %v, want Unavailable with %q", err, tc.unavailable)
			}
		})
	}
}

// Issue 29 item 13: --remote-timeout is refused when it could not do what
// it says (not positive; no --remote).
func TestItem13RemoteTimeoutFlag(t *testing.T) {
	cfg := write(t, t.TempDir(), "rec.yaml", "router: {policy: {choices: [round_robin, kv_router]}}\n")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--remote", "http://127.0.0.1:1", "--remote-timeout", "0s"}, "--remote-timeout: must be > 0, got 0s"},
		{[]string{"--remote-timeout", "1m"}, "--remote-timeout: bounds --remote trials; without --remote it does nothing"},
	} {
		var stdout, stderr bytes.Buffer
		err := run(append([]string{"recommend", "-c", cfg}, tc.args...), &stdout, &stderr)
		if err == nil || exitCode(err) != 2 || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want exit 2 with %q", tc.args, err, tc.want)
		}
	}
}
