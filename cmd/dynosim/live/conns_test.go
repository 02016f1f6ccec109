package live

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dynosim/dynosim-web/core/sim"
	"github.com/dynosim/dynosim-web/internal/patience"
)

// serveLimited runs Serve on a loopback port with the given options and
// returns its address; the server stops with the test.
func serveLimited(t *testing.T, o Options) string {
	t.Helper()
	o.Inputs = sim.Inputs{Config: []byte(twoWorkers), ConfigName: "live.yaml"}
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln, time.Second) }()
	t.Cleanup(func() {
		stop()
		select {
		case err := <-served:
			if err != nil {
				t.Error(err)
			}
		case <-patience.After(t):
			t.Error("Serve did not return")
		}
	})
	return ln.Addr().String()
}

// normal sends one small completion on a new connection and wants it
// served (bounded only by the test binary's deadline).
func normal(t *testing.T, addr, what string) {
	t.Helper()
	ctx, cancel := patience.Context(t)
	defer cancel()
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	req, _ := http.NewRequestWithContext(ctx, "POST", "http://"+addr+"/v1/completions", strings.NewReader(`{"prompt":"hello","max_tokens":2}`))
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatalf("%s: a normal request: %v", what, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("%s: a normal request: %d %s", what, resp.StatusCode, b)
	}
}

// peers opens n connections that send text (possibly nothing) and stay.
func peers(t *testing.T, addr string, n int, text string) []net.Conn {
	t.Helper()
	var cs []net.Conn
	for range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if text != "" {
			io.WriteString(c, text)
		}
		cs = append(cs, c)
	}
	return cs
}

// Issue 29 item 4: with no read or idle timeout and no connection cap,
// a few hundred slow or idle connections (with 256 open files) blocked
// every normal request. Under a cap of 16 connections, each kind of
// hostile peer in turn takes every slot and more, and a normal request is
// still served: keep-alive connections idle between requests are closed
// for it, silent ones after silentGrace, and slow headers and slow bodies
// at the read timeout (a body with 408). A stream outlives both timeouts.
func TestSlowAndIdleConnectionsDoNotBlock(t *testing.T) {
	const cap = 16
	addr := serveLimited(t, Options{MaxConnections: cap, ReadTimeout: time.Second, IdleTimeout: time.Hour})

	// Idle keep-alive connections, each after one request; the idle
	// timeout (an hour) does not free them.
	idle := peers(t, addr, cap, "")
	for _, c := range idle {
		io.WriteString(c, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("health on an idle-to-be connection: %v %v", resp, err)
		}
		resp.Body.Close()
	}
	normal(t, addr, "16 idle keep-alive connections")
	closed := 0
	for _, c := range idle {
		c.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); err == io.EOF {
			closed++
		}
	}
	if closed == 0 {
		t.Error("no idle connection was closed to make room")
	}

	// Connections that never send, more than the cap.
	peers(t, addr, 3*cap, "")
	normal(t, addr, "48 silent connections")

	// Slow headers, and slow bodies (a header, then 1 byte of 100).
	peers(t, addr, 2*cap, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Ty")
	normal(t, addr, "32 slow headers")
	slow := peers(t, addr, 2*cap, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
	normal(t, addr, "32 slow bodies")
	resp, err := http.ReadResponse(bufio.NewReader(slow[0]), nil)
	if err != nil || resp.StatusCode != http.StatusRequestTimeout {
		t.Errorf("a slow body: %v %v, want 408", resp, err)
	}

	// A stream runs past the read timeout (three of them): it is not cut.
	ctx, cancel := patience.Context(t)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", "http://"+addr+"/v1/completions", strings.NewReader(`{"prompt":"a long story","max_tokens":100000,"stream":true}`))
	sresp, err := http.DefaultClient.Do(req)
	if err != nil || sresp.StatusCode != 200 {
		t.Fatalf("a stream: %v %v", sresp, err)
	}
	defer sresp.Body.Close()
	br := bufio.NewReader(sresp.Body)
	began, chunks := time.Now(), 0
	for time.Since(began) < 3*time.Second {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("the stream was cut after %v, %d chunks: %v", time.Since(began), chunks, err)
		}
		if strings.HasPrefix(line, "data: ") {
			if strings.Contains(line, "error") || strings.Contains(line, "[DONE]") {
				t.Fatalf("the stream ended after %v: %s", time.Since(began), line)
			}
			chunks++
		}
	}
	if chunks < 2 {
		t.Errorf("%d chunks in three seconds", chunks)
	}
}

// The connection cap follows the open-file limit.
func TestDefaultMaxConnections(t *testing.T) {
	n, ok := openFileLimit()
	got := DefaultMaxConnections()
	switch {
	case !ok && got != MaxAutoConnections:
		t.Errorf("no file limit known: %d", got)
	case ok && (got < 1 || got > MaxAutoConnections || got > max(n-64, n/2)):
		t.Errorf("file limit %d: cap %d", n, got)
	}
}
