package live

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/internal/patience"
)

// freeBase finds n consecutive free loopback ports (the kernel's choice of
// one, then its neighbours), so parallel test runs do not clash.
func freeBase(t *testing.T, n int) int {
	t.Helper()
	for try := 0; try < 50; try++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		base := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		if base+n > 65535 {
			continue
		}
		ok := true
		for i := range n {
			l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", base+i))
			if err != nil {
				ok = false
				break
			}
			l.Close()
		}
		if ok {
			return base
		}
	}
	t.Fatal("no free port range")
	return 0
}

// TestItem31_3PerWorkerPorts starts the dynosim binary with
// --per-worker-ports and sends a request to each worker's port: it runs on
// that worker (its worker's request_success_total counts it, the other
// worker's not), past the round-robin router. Bad bases are refused.
func TestItem31_3PerWorkerPorts(t *testing.T) {
	bin := os.Getenv("DYNOSIM_BIN")
	if bin == "" {
		bin = filepath.Join(t.TempDir(), "dynosim")
		if out, err := exec.Command("go", "build", "-o", bin, "..").CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
	}
	cfg := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(cfg, []byte("engine:\n  workers:\n    aggregated:\n      parallelism: {replicas: 3}\nrouter: {policy: round_robin}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		base    func() (int, string) // the base and --addr
		refused string               // a part of the error, "" if it serves
		target  []int                // workers to send to, in order
	}{
		{"serves", func() (int, string) { b := freeBase(t, 4); return b + 1, fmt.Sprintf("127.0.0.1:%d", b) }, "", []int{2, 2, 0}},
		{"below 1024", func() (int, string) { return 80, "127.0.0.1:0" }, "BASE must be in 1024..65533", nil},
		{"past 65535", func() (int, string) { return 65534, "127.0.0.1:0" }, "BASE must be in 1024..65533", nil},
		{"clashes with --addr", func() (int, string) { b := freeBase(t, 3); return b, fmt.Sprintf("127.0.0.1:%d", b+1) }, "hold --addr's port", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// freeBase's ports are free when it looks, not when the server
			// binds: another process may take one in between. A bind that
			// fails with "address already in use" starts over on new ports.
			var (
				base    int
				main    string
				workers map[int]string
				stderr  io.ReadCloser
			)
			for attempt := 0; ; attempt++ {
				var addr string
				base, addr = tc.base()
				ctx, cancel := patience.Context(t)
				defer cancel()
				cmd := exec.CommandContext(ctx, bin, "live", "-c", cfg, "--addr", addr, "--speedup", "10", "--per-worker-ports", fmt.Sprint(base))
				stderr, _ = cmd.StderrPipe()
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				defer func() { cmd.Process.Kill(); cmd.Wait() }()
				sc := bufio.NewScanner(stderr)
				workers = map[int]string{}
				busy := false
				for sc.Scan() {
					line := sc.Text()
					if strings.Contains(line, "address already in use") {
						busy = true
						break
					}
					if tc.refused != "" {
						if strings.Contains(line, tc.refused) {
							return
						}
						continue
					}
					if m := regexp.MustCompile(`serving .* on (http://\S+)/v1`).FindStringSubmatch(line); m != nil {
						main = m[1]
					}
					if m := regexp.MustCompile(`worker (\d+) on (http://\S+)/v1`).FindStringSubmatch(line); m != nil {
						var w int
						fmt.Sscan(m[1], &w)
						workers[w] = m[2]
					}
					if len(workers) == 3 {
						break
					}
				}
				if !busy || attempt == 4 {
					break
				}
				t.Logf("attempt %d: a port of %d.. was taken before the server bound it; retrying", attempt, base)
				cmd.Process.Kill()
				cmd.Wait()
			}
			if tc.refused != "" {
				t.Fatalf("no refusal naming %q", tc.refused)
			}
			if len(workers) != 3 || workers[1] != fmt.Sprintf("http://127.0.0.1:%d", base+1) {
				t.Fatalf("worker addresses %v (base %d)", workers, base)
			}
			go io.Copy(io.Discard, stderr)
			want := map[int]int{}
			for _, w := range tc.target {
				resp := post(t, context.Background(), workers[w]+"/v1/completions", `{"prompt":"hello there","max_tokens":3}`)
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					t.Fatalf("worker %d: %d %s", w, resp.StatusCode, b)
				}
				want[w]++
			}
			m := scrape(t, main)
			for w := range 3 {
				got := metricSum(grep(m, fmt.Sprintf(`worker="%d"`, w)), "vllm:request_success_total")
				if got != float64(want[w]) {
					t.Errorf("worker %d ran %v requests, want %d:\n%s", w, got, want[w], grep(m, "vllm:request_success_total{"))
				}
			}
		})
	}
}
