//go:build unix

package main

import (
	"bufio"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/dynosim/dynosim-web/core/report/schema"
)

// writeMillionTrace writes a Mooncake trace of n requests arriving as a
// Poisson stream at rate req/s, prompts of 128–1,024 tokens sharing hash
// blocks drawn from a pool of 100,000 (so prefix hits happen), outputs of
// 16–64 tokens. Seeded: the same file every time.
func writeMillionTrace(t *testing.T, path string, n int, rate float64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	rng := rand.New(rand.NewPCG(34, 6))
	var ts float64
	line := make([]byte, 0, 256)
	for i := 0; i < n; i++ {
		ts += rng.ExpFloat64() / rate * 1000
		in := 128 + rng.IntN(897)
		line = append(line[:0], `{"timestamp":`...)
		line = strconv.AppendInt(line, int64(ts), 10)
		line = append(line, `,"input_length":`...)
		line = strconv.AppendInt(line, int64(in), 10)
		line = append(line, `,"output_length":`...)
		line = strconv.AppendInt(line, int64(16+rng.IntN(49)), 10)
		line = append(line, `,"hash_ids":[`...)
		for b := 0; b < (in+511)/512; b++ {
			if b > 0 {
				line = append(line, ',')
			}
			line = strconv.AppendInt(line, int64(rng.IntN(100_000)), 10)
		}
		line = append(line, "]}\n"...)
		if _, err := w.Write(line); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestItem34_6MillionRequestsUnderOneGiB: issue 34 item 6, a
// 1,000,000-request trace replays natively in at most 1 GiB peak RSS.
// The trace is kept compactly (interned hash blocks, core/workload) and the
// report keeps fixed-size per-request records only when asked
// (--capture-per-request), so memory follows the trace, not the tokens.
// The replay runs in a child process (the real main, re-executed) so its
// peak RSS is its own, read from the kernel's rusage: a memory figure, not
// a clock, so a busy machine cannot make it fail.
func TestItem34_6MillionRequestsUnderOneGiB(t *testing.T) {
	const n, limit = 1_000_000, 1 << 30
	trace := filepath.Join(t.TempDir(), "million.jsonl")
	writeMillionTrace(t, trace, n, 200)
	args := []string{"predict", "--trace", trace, "--format", "json",
		"--set", "engine.workers.aggregated.parallelism.replicas=8",
		"--set", "engine.workers.aggregated.timing.type=polynomial"}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "DYNOSIM_RUN_MAIN=1", "DYNOSIM_ARGS="+strings.Join(args, " "))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("predict: %v: %s", err, stderr.String())
	}
	var rep struct {
		Summary map[string]float64 `json:"summary"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatal(err)
	}
	if got := rep.Summary[schema.NumRequests]; got != n {
		t.Fatalf("%s = %v, want %d", schema.NumRequests, got, n)
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		t.Fatalf("no rusage: %T", cmd.ProcessState.SysUsage())
	}
	peak := ru.Maxrss * 1024 // Linux reports KiB
	t.Logf("%d requests: peak RSS %.0f MiB (limit %d MiB), CPU %.2f s", n, float64(peak)/(1<<20), limit>>20,
		cmd.ProcessState.UserTime().Seconds()+cmd.ProcessState.SystemTime().Seconds())
	if peak > limit {
		t.Fatalf("peak RSS %d bytes > %d", peak, limit)
	}
}
