package live

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/dynosim/dynosim-web/core/sim"
	"github.com/dynosim/dynosim-web/internal/patience"
	"github.com/dynosim/dynosim-web/timing"
)

// Shutdown is graceful: a stream open when it starts runs to its end,
// while new connections are refused; then Serve returns.
func TestGracefulShutdown(t *testing.T) {
	s, err := New(Options{Inputs: sim.Inputs{Config: []byte(twoWorkers)}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln, 30*time.Second) }()
	base := "http://" + ln.Addr().String()
	resp := post(t, context.Background(), base+"/v1/completions", `{"prompt":"a story","max_tokens":60,"stream":true}`)
	defer resp.Body.Close()
	idle, err := net.Dial("tcp", ln.Addr().String()) // a pooled connection that never sends
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	time.Sleep(20 * time.Millisecond) // the server has it (StateNew)
	stop()                            // SIGTERM, as the CLI maps it
	began := time.Now()
	ev := events(t, resp.Body)
	if n := len(ev); n != 61 { // 60 tokens and the finish chunk
		t.Fatalf("the open stream got %d chunks", n)
	}
	select {
	case err := <-served:
		if err != nil {
			t.Fatal(err)
		}
		if d := time.Since(began); d > 3*time.Second { // Go waits 5 s for a connection that sent nothing
			t.Errorf("shutdown took %v", d)
		}
	case <-patience.After(t):
		t.Fatal("Serve did not return by the test's deadline")
	}
	if _, err := http.Get(base + "/health"); err == nil {
		t.Fatal("a new request was served after the shutdown")
	}
}

// The live mode's modules (ZMQ, msgpack, client_golang) stay out of the
// WebAssembly builds: the page and the Worker do not import this package.
func TestWasmBuildsLeaveLiveOut(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	cmd := exec.Command("go", "list", "-deps", "../../../wasm/browser", "../../../wasm/worker", "../../../ui")
	cmd.Env = append(cmd.Environ(), "GOOS=js", "GOARCH=wasm")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{"github.com/go-zeromq/", "github.com/vmihailenco/msgpack", "github.com/prometheus/", "cmd/dynosim/live"} {
			if strings.Contains(dep, banned) {
				t.Errorf("a wasm build imports %s", dep)
			}
		}
	}
}

// A client that stops reading is cut off once a write stalls past the
// write timeout, and its request is aborted: it holds nothing.
//
// Nothing here races the wall clock. The socket buffers on both sides are
// shrunk to a few KiB, so a write stalls after a few hundred tokens (with
// the kernel's autotuned buffers it took megabytes of chunks). The pace
// (speedup 4, about 500 tokens a second) is one the driver keeps up with
// under -race on a loaded machine: at speedup 1000 it fell ever further
// behind, took the abort only between ever longer catch-up steps, and the
// request outgrew the KV cache first, ending as "error", not "abort" (the
// flake). The wait for the abort is bounded only by the test binary's own
// deadline (waitUntil), not by a guess at the machine's speed.
func TestStalledClientIsCut(t *testing.T) {
	// Restored after the server closes (cleanups run last-in first-out), so
	// no handler still running reads the variable while it is written.
	old := writeTimeout
	t.Cleanup(func() { writeTimeout = old })
	writeTimeout = 300 * time.Millisecond
	s, err := New(Options{Speedup: 4, Inputs: sim.Inputs{Config: []byte(twoWorkers), ConfigName: "live.yaml"}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewUnstartedServer(s.Handler())
	hs.Listener = smallSendBuffers{hs.Listener}
	hs.Start()
	t.Cleanup(func() {
		hs.Close()
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	c, err := net.Dial("tcp", strings.TrimPrefix(hs.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.(*net.TCPConn).SetReadBuffer(smallBuffer); err != nil {
		t.Fatal(err)
	}
	body := `{"prompt":"never read","max_tokens":400000,"stream":true}`
	fmt.Fprintf(c, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	// Never read: the socket buffers fill, a write stalls, the server gives up.
	patience.Until(t, "the stalled client's request is aborted", func() (bool, string) {
		m := scrape(t, hs.URL)
		done := strings.Contains(m, `finished_reason="abort",model_name="llama-3.1-8b",worker="0"} 1`) && metricSum(m, "vllm:num_requests_running") == 0
		return done, grep(m, "num_requests_running", "request_success")
	})
}

// smallBuffer is the socket buffer size (bytes) of TestStalledClientIsCut's
// connection (the kernel doubles it for its bookkeeping).
const smallBuffer = 4096

// smallSendBuffers fixes each accepted connection's send buffer at
// smallBuffer, which also turns off the kernel's autotuning of it.
type smallSendBuffers struct{ net.Listener }

func (l smallSendBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok && err == nil {
		if err := tc.SetWriteBuffer(smallBuffer); err != nil {
			c.Close()
			return nil, fmt.Errorf("set the send buffer: %w", err)
		}
	}
	return c, err
}

// Issue 29 item 5: --speedup is bounded to what the clock can carry for a
// long-running server (1e-12 spun at 100 % CPU after one request: its wall
// wait overflowed; 1e6 reached the 100-year horizon in 53 minutes).
func TestSpeedupBounds(t *testing.T) {
	for _, x := range []float64{1e-12, 1e-4, 1001, 1e6, math.NaN(), math.Inf(1), -1} {
		if _, err := New(Options{Speedup: x, Inputs: sim.Inputs{Config: []byte(twoWorkers)}}); err == nil || !strings.Contains(err.Error(), "--speedup: must be between 0.001 and 1000") {
			t.Errorf("speedup %v: %v", x, err)
		}
	}
	for _, x := range []float64{MinSpeedup, MaxSpeedup} {
		s, err := New(Options{Speedup: x, Inputs: sim.Inputs{Config: []byte(twoWorkers)}})
		if err != nil {
			t.Fatalf("speedup %v: %v", x, err)
		}
		s.Close()
	}
	// The conversions saturate at the horizon instead of wrapping.
	d := &driver{speedup: MinSpeedup, t0: time.Unix(0, 0)}
	if w := d.wall(timing.Horizon - 1); w.Before(d.t0) {
		t.Errorf("wall of the horizon at speedup %v is before the start: %v", MinSpeedup, w)
	}
	d.speedup = MaxSpeedup
	if v := d.virtual(d.t0.Add(200 * 365 * 24 * time.Hour)); v != timing.Horizon {
		t.Errorf("virtual time 200 years in at speedup %v: %v, want the horizon", MaxSpeedup, v)
	}
}

// Issue 29 item 5: a clock that reaches the horizon stops the server with
// an error naming it (the request gets a 503 naming it), never a spin
// and never a server that answers 503 forever.
func TestHorizonStopsServer(t *testing.T) {
	const cfg = `engine:
  workers:
    aggregated:
      parallelism: {replicas: 2}
      timing: {type: fixed, prefill_ms: 3155760000000, decode_ms: 1}
router: {policy: round_robin}
`
	s, err := New(Options{Inputs: sim.Inputs{Config: []byte(cfg), ConfigName: "live.yaml"}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(context.Background(), ln, time.Second) }()
	resp := post(t, context.Background(), "http://"+ln.Addr().String()+"/v1/completions", `{"prompt":"x","max_tokens":2,"stream":true}`)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	// (the pass is priced as the request is admitted, before its stream
	// starts: the answer is a 503 naming the cause)
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(b), "horizon") {
		t.Errorf("the request: %d %s, want a 503 naming the horizon", resp.StatusCode, b)
	}
	select {
	case err := <-served:
		if err == nil || !strings.Contains(err.Error(), "a pass of worker") || !strings.Contains(err.Error(), "horizon") {
			t.Fatalf("Serve returned %v, want the horizon error", err)
		}
	case <-patience.After(t):
		t.Fatal("Serve did not return after the simulation stopped")
	}
}

// Issue 29 item 7: on SIGTERM with a short grace, a quarter to two thirds
// of the open streams were cut with neither an error event nor [DONE]
// (the connections were closed while their handlers wrote the end). Every
// stream open when the grace runs out ends with an error event naming the
// shutdown, then data: [DONE], and Serve returns.
func TestSIGTERMEndsEveryStream(t *testing.T) {
	s, err := New(Options{Inputs: sim.Inputs{Config: []byte(twoWorkers), ConfigName: "live.yaml"}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln, 50*time.Millisecond) }()
	const n = 100
	tr := &http.Transport{MaxConnsPerHost: 0, MaxIdleConnsPerHost: n}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	ends := make(chan string, n)
	started := make(chan struct{}, n)
	for i := range n {
		go func() {
			body := fmt.Sprintf(`{"prompt":"story %d","max_tokens":400000,"stream":true}`, i)
			resp, err := client.Post("http://"+ln.Addr().String()+"/v1/completions", "application/json", strings.NewReader(body))
			if err != nil {
				ends <- "request: " + err.Error()
				started <- struct{}{}
				return
			}
			defer resp.Body.Close()
			br := bufio.NewReader(resp.Body)
			if _, err := br.ReadString('\n'); err != nil { // a token: it runs
				ends <- "first token: " + err.Error()
				started <- struct{}{}
				return
			}
			started <- struct{}{}
			// The last two events, once the stream ends.
			var last []string
			for {
				line, err := br.ReadString('\n')
				if err != nil {
					if err != io.EOF {
						last = append(last, "read: "+err.Error())
					}
					break
				}
				if strings.HasPrefix(line, "data: ") {
					last = append(last, strings.TrimSpace(line))
					if len(last) > 2 {
						last = last[1:]
					}
				}
			}
			ends <- strings.Join(last, " | ")
		}()
	}
	for range n {
		select {
		case <-started:
		case <-patience.After(t):
			t.Fatal("the streams did not all start by the test's deadline")
		}
	}
	stop() // SIGTERM, as the CLI maps it
	cut := 0
	for i := range n {
		var end string
		select {
		case end = <-ends:
		case <-patience.After(t):
			t.Fatalf("%d streams ended by the test's deadline", i)
		}
		before, after, ok := strings.Cut(end, " | ")
		if !ok || !strings.Contains(before, `"error"`) || !strings.Contains(before, "shutting down") || after != "data: [DONE]" {
			cut++
			if cut <= 3 {
				t.Errorf("a stream ended with %q, want an error event naming the shutdown, then data: [DONE]", end)
			}
		}
	}
	if cut > 0 {
		t.Errorf("%d of %d streams cut without an error event and [DONE]", cut, n)
	}
	select {
	case err := <-served:
		if err != nil {
			t.Fatal(err)
		}
	case <-patience.After(t):
		t.Fatal("Serve did not return")
	}
}
