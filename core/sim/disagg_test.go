package sim

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/core/engine"
	"github.com/dynosim/dynosim-web/core/replay"
	"github.com/dynosim/dynosim-web/core/report"
	"github.com/dynosim/dynosim-web/core/report/schema"
	"github.com/dynosim/dynosim-web/timing"
)

// disaggConfig is the benchmark setup split in two: 4 prefill and 4 decode
// workers of the same kind as benchConfig's 8 aggregated ones (8 GPUs
// either way), with a 50 GB/s transfer link.
const disaggConfig = `
engine:
  mode: disaggregated
  kv_transfer: {bandwidth_gb_per_second: 50}
  workers:
    prefill:
      parallelism: {replicas: 4}
      kv_cache: {block_size: 512, capacity: {blocks: 16384}}
      timing: {type: polynomial}
    decode:
      parallelism: {replicas: 4}
      kv_cache: {block_size: 512, capacity: {blocks: 16384}}
      timing: {type: polynomial}
`

// runKept replays like Prepared.Run and returns the pools too, so a test
// can inspect the workers after the run.
func runKept(t *testing.T, in Inputs) (*report.Report, []replay.Pool) {
	t.Helper()
	p, err := Prepare(in)
	if err != nil {
		t.Fatal(err)
	}
	cfg := p.cfg
	c, err := p.cluster(&cfg, p.wl)
	if err != nil {
		t.Fatal(err)
	}
	pools := c.pools
	rep, err := replay.Run(p.wl, pools, replay.Options{Load: loadOf(&cfg), Capture: in.CapturePerRequest, Transfer: c.xfer,
		MaxTime: timing.FromMs(cfg.Traffic.Stop.MaxVirtualTimeSeconds * 1000), MaxRequests: cfg.Traffic.Stop.Requests})
	if err != nil {
		t.Fatal(err)
	}
	return rep, pools
}

// Conservation on the whole conversation trace in disaggregated mode, on
// both bootstrap orders and the direct path: every request completes with
// all its tokens or is rejected with a reason, and every KV block, hold and
// reservation returns to both pools.
func TestDisaggConservation(t *testing.T) {
	if testing.Short() {
		t.Skip("whole trace")
	}
	trace := sharedTrace(t, "mooncake/conversation_trace.jsonl")
	for _, set := range []string{"engine.backend=vllm", "engine.backend=sglang", "engine.kv_transfer.handoff=direct",
		// A decode pool too small for the longest prompts: rejections on
		// the destination side release the source's holds.
		"engine.workers.decode.kv_cache.capacity.blocks=40"} {
		t.Run(set, func(t *testing.T) {
			rep, pools := runKept(t, Inputs{Config: []byte(disaggConfig), Sets: []string{set}, Trace: trace, TraceName: "conversation_trace.jsonl", CapturePerRequest: true})
			breakdownsAddUp(t, rep)
			rejected := 0
			for _, r := range rep.Requests() {
				switch {
				case r.TerminalStatus == "completed" && r.OutputLength == r.RequestedOutputLength:
				case r.TerminalStatus == "rejected" && r.RejectionReason != nil:
					rejected++
				default:
					t.Fatalf("request %d: %s with %d of %d tokens", r.UUID, r.TerminalStatus, r.OutputLength, r.RequestedOutputLength)
				}
			}
			if n := len(rep.Requests()); n != 12031 || rep.Summary[schema.NumRequests] != float64(n) {
				t.Fatalf("%d records, %v requests", n, rep.Summary[schema.NumRequests])
			}
			if strings.Contains(set, "blocks=40") != (rejected > 0) {
				t.Fatalf("%d rejected", rejected)
			}
			for _, p := range pools {
				for i, w := range p.Workers {
					m := w.Metrics()
					if m.Holds != 0 || m.Reserved != 0 || m.Running != 0 || m.Waiting != 0 {
						t.Fatalf("%s worker %d ends with %+v", p.Name, i, m)
					}
					if cfgBackend(set) != "sglang" && m.ActiveBlocks != 0 {
						t.Fatalf("%s worker %d ends with %d active blocks", p.Name, i, m.ActiveBlocks)
					}
				}
			}
			t.Logf("%s: %d rejected, mean TTFT %.0f ms, %v handoffs", set, rejected, rep.Summary[schema.TTFT.Key(schema.Mean)], rep.Summary[schema.KVTransferHandoffs])
		})
	}
}

func cfgBackend(set string) string { return strings.TrimPrefix(set, "engine.backend=") }

// destination_missing never moves more than full_prompt: per request at
// most its prompt, in total less on the conversation trace (multi-turn
// prompts find their earlier turns at the destination). A transfer takes
// no time exactly when nothing is missing, which a block-aligned prompt
// repeated on the same decode worker shows (the trace's own prompts end in
// a partial block, which is never resident).
func TestDestinationMissingNeverExceedsFullPrompt(t *testing.T) {
	if testing.Short() {
		t.Skip("whole trace")
	}
	trace := sharedTrace(t, "mooncake/conversation_trace.jsonl")
	lines := strings.SplitN(string(trace), "\n", 2)
	// The trace's first request, its prompt cut to whole 512-token blocks,
	// again a minute later.
	var first struct{ ids []string }
	_, rest, _ := strings.Cut(lines[0], `"hash_ids": [`)
	ids, _, _ := strings.Cut(rest, "]")
	first.ids = strings.Split(ids, ", ")
	aligned := fmt.Sprintf(`{"timestamp": %%d, "input_length": %d, "output_length": 4, "hash_ids": [%s]}`, len(first.ids)*512, ids)
	trace = append([]byte(fmt.Sprintf(aligned, 0)+"\n"), trace...)
	trace = append(trace, []byte("\n"+fmt.Sprintf(aligned, 60000)+"\n")...)

	bytes := map[string]float64{}
	for _, mode := range []string{"destination_missing", "full_prompt"} {
		rep, _ := runKept(t, Inputs{Config: []byte(disaggConfig), Sets: []string{"engine.kv_transfer.timing_mode=" + mode, "engine.workers.decode.parallelism.replicas=1"},
			Trace: trace, TraceName: "conversation_trace.jsonl", CapturePerRequest: true})
		bytes[mode] = rep.KVTransfer.TransferredBytes
		zero := 0
		for _, r := range rep.Requests() {
			tok, ms := *r.KVTransferTokens, *r.KVTransferMs
			if tok > r.InputLength || (tok == 0) != (ms == 0) || mode == "full_prompt" && tok != r.InputLength {
				t.Fatalf("%s: request %d moves %d of %d tokens in %v ms", mode, r.UUID, tok, r.InputLength, ms)
			}
			if tok == 0 {
				zero++
				if *r.DecodeReusedInputTokens != r.InputLength {
					t.Fatalf("%s: request %d moved nothing with %d of %d tokens resident", mode, r.UUID, *r.DecodeReusedInputTokens, r.InputLength)
				}
			}
		}
		if mode == "destination_missing" && zero == 0 {
			t.Fatal("the repeated block-aligned prompt was transferred again")
		}
	}
	if !(bytes["destination_missing"] < bytes["full_prompt"]) {
		t.Fatalf("destination_missing moved %v bytes, full_prompt %v", bytes["destination_missing"], bytes["full_prompt"])
	}
	t.Logf("transferred: destination_missing %.3g B, full_prompt %.3g B", bytes["destination_missing"], bytes["full_prompt"])
}

// The disaggregated config's knobs reach the engines: each pool's GPU,
// parallelism and timing, bytes per token from the model, GPUs summed over
// the pools, and the engine roles.
func TestDisaggWiring(t *testing.T) {
	cfg := `
engine:
  mode: disaggregated
  model: llama-3.1-8b
  kv_transfer: {bandwidth_gb_per_second: 25}
  workers:
    prefill: {hardware: b200, parallelism: {replicas: 2, tensor: 2}}
    decode: {parallelism: {replicas: 3, attention_data: 2}}
traffic: {stop: {requests: 20}}
`
	rep, pools := runKept(t, Inputs{Config: []byte(cfg)})
	if len(pools) != 2 || pools[0].Name != "prefill" || len(pools[0].Workers) != 2 || pools[1].Name != "decode" || len(pools[1].Workers) != 3 || len(pools[1].Workers[0].Ranks) != 2 {
		t.Fatalf("pools %+v", pools)
	}
	if rep.Summary[schema.TotalGPUs] != 2*2+3*2 || rep.Summary[schema.PrefillGPUsPerWorker] != 2 || rep.Summary[schema.DecodeGPUsPerWorker] != 2 {
		t.Fatalf("GPUs: total %v, prefill %v, decode %v per worker", rep.Summary[schema.TotalGPUs], rep.Summary[schema.PrefillGPUsPerWorker], rep.Summary[schema.DecodeGPUsPerWorker])
	}
	// llama-3.1-8b: 32 layers × 2 × 8 KV heads × 128 × 2 bytes.
	if k := rep.KVTransfer; k.BytesPerToken != 131072 || *k.BandwidthGBps != 25 || k.Order != "source_first" || k.Handoffs != 20 {
		t.Fatalf("kv_transfer %+v", k)
	}
	p, err := Prepare(Inputs{Config: []byte(cfg)})
	if err != nil {
		t.Fatal(err)
	}
	pc, _, err := engineConfig(&p.cfg, roles(&p.cfg)[0], p.in, p.wl)
	if err != nil {
		t.Fatal(err)
	}
	dc, _, _ := engineConfig(&p.cfg, roles(&p.cfg)[1], p.in, p.wl)
	pr, dr := pc.Model.(*timing.Roofline), dc.Model.(*timing.Roofline)
	if pr.GPU.Name == dr.GPU.Name || pr.Par.Tensor != 2 {
		t.Fatalf("prefill on %s TP%d, decode on %s: each pool's hardware and parallelism", pr.GPU.Name, pr.Par.Tensor, dr.GPU.Name)
	}
	if got := pools[0].Workers[0].Ranks[0].(*engine.Core).Config(); got.Prefill == nil || !got.Prefill.Hold || got.Decode {
		t.Fatalf("prefill engine %+v", got)
	}
	if got := pools[1].Workers[0].Ranks[0].(*engine.Core).Config(); got.Prefill != nil || !got.Decode || got.Events {
		t.Fatalf("decode engine %+v", got)
	}
	if m := rep.Summary[schema.MeanKVTransferMs]; !(m > 0) || math.IsNaN(m) {
		t.Fatalf("mean transfer %v ms", m)
	}
}

// BenchmarkConversationTraceDisagg is the benchmark replay split into
// 4 prefill and 4 decode workers (the same 8 GPUs as
// BenchmarkConversationTrace).
func BenchmarkConversationTraceDisagg(b *testing.B) {
	benchTrace(b, "mooncake/conversation_trace.jsonl", disaggConfig)
}
