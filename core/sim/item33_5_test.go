package sim

import (
	"bytes"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/core/report"
	"github.com/dynosim/dynosim-web/core/report/schema"
)

// TestItem33_5BatchWaitReplay: a TRT-LLM closed-loop run with
// batch_wait_timeout_iters holds each new prompt while the others decode,
// so TTFT grows by up to that many passes; a ratio the prompt alone
// reaches releases it at once, and 0 / 0 is today's report byte for byte.
func TestItem33_5BatchWaitReplay(t *testing.T) {
	const cfg = `
traffic:
  source: {type: synthetic, input_tokens: 512, output_tokens: 64}
  load: {type: concurrency, concurrency: 8, ramp_up_seconds: 0.4}
  stop: {requests: 80}
engine:
  backend: trtllm
  workers: {aggregated: {scheduler: {max_batched_tokens: 8192}, timing: {type: fixed, prefill_ms: 20, decode_ms: 5}}}
`
	const key = "engine.workers.aggregated.scheduler."
	run := func(sets ...string) (*report.Report, []byte, error) {
		t.Helper()
		rep, err := Predict(Inputs{Config: []byte(cfg), Sets: sets}, nil)
		if err != nil {
			return nil, nil, err
		}
		for _, k := range report.WallClockKeys {
			rep.Summary[k] = 0
		}
		j, err := rep.JSON()
		if err != nil {
			t.Fatal(err)
		}
		return rep, j, nil
	}
	base, plain, err := run()
	if err != nil {
		t.Fatal(err)
	}
	ttft := func(r *report.Report) float64 { return r.Summary[schema.TTFT.Key(schema.Mean)] }
	for _, tc := range []struct {
		name     string
		sets     []string
		same     bool    // the report is byte-identical to the default's
		min, max float64 // else the mean TTFT's growth, ms
		err      string
	}{
		{"0 / 0 explicit", []string{key + "batch_wait_timeout_iters=0", key + "batch_wait_max_tokens_ratio=0"}, true, 0, 0, ""},
		{"ratio the prompt reaches (512 + decodes ≥ 0.05 × 8192)", []string{key + "batch_wait_timeout_iters=20", key + "batch_wait_max_tokens_ratio=0.05"}, true, 0, 0, ""},
		// A held pass is a decode step (5 ms; prefill 20 ms when the held
		// prompts finally run): at most 20 of them, and the run's prompts
		// mostly arrive while others decode.
		{"20 passes, ratio 0.9", []string{key + "batch_wait_timeout_iters=20", key + "batch_wait_max_tokens_ratio=0.9"}, false, 10 * 5, 20 * 25, ""},
		{"on vllm", []string{"engine.backend=vllm", key + "batch_wait_timeout_iters=20"}, false, 0, 0, key + "batch_wait_timeout_iters: TensorRT-LLM's batch waiting, backend trtllm only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, j, err := run(tc.sets...)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.same {
				if !bytes.Equal(j, plain) {
					t.Fatal("report differs from the default's")
				}
				return
			}
			t.Logf("mean TTFT %.1f ms, default %.1f", ttft(rep), ttft(base))
			if d := ttft(rep) - ttft(base); d < tc.min || d > tc.max {
				t.Fatalf("mean TTFT %.1f ms, default %.1f: growth %.1f ms, want in [%v, %v]", ttft(rep), ttft(base), d, tc.min, tc.max)
			}
		})
	}
}
