package live

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/dynosim/dynosim-web/core/sim"
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
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return")
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
func TestStalledClientIsCut(t *testing.T) {
	defer func(d time.Duration) { writeTimeout = d }(writeTimeout)
	writeTimeout = 300 * time.Millisecond
	_, hs := start(t, twoWorkers, Options{Speedup: 1000})
	c, err := net.Dial("tcp", strings.TrimPrefix(hs.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	body := `{"prompt":"never read","max_tokens":100000000,"stream":true}`
	fmt.Fprintf(c, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	// Never read: the socket buffers fill, a write stalls, the server gives up.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		m := scrape(t, hs.URL)
		if strings.Contains(m, `finished_reason="abort",model_name="llama-3.1-8b",worker="0"} 1`) && metricSum(m, "vllm:num_requests_running") == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stalled client's request is still running:\n%s", grep(m, "num_requests_running", "request_success"))
		}
	}
}
