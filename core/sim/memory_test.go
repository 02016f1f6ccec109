package sim

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/core/config"
)

// allocated is the bytes f allocates (garbage included).
func allocated(f func()) uint64 {
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	f()
	runtime.ReadMemStats(&m1)
	return m1.TotalAlloc - m0.TotalAlloc
}

// Issue 29 item 9: configs inside the documented bounds ran out of memory
// before the first pass, their pools built at full size up front. Pools now
// allocate a block on first use, so the reproductions run with a
// short workload in a fraction of what one pool cost before (8 pools of
// 2^24 blocks: about 8 GiB; 65,536 DP ranks or 8,192 derived pools:
// past a 4 GiB address space).
func TestItem9BoundsConfigsRunLazily(t *testing.T) {
	for _, tc := range []struct{ name, cfg string }{
		{"4096 replicas × 16 DP ranks", `engine: {workers: {aggregated: {parallelism: {replicas: 4096, attention_data: 16}}}}`},
		{"8 pools of 2^24 blocks", `engine: {workers: {aggregated: {parallelism: {replicas: 8}, kv_cache: {capacity: {type: fixed, blocks: 16777216}}, timing: {type: polynomial}}}}`},
		{"two disaggregated pools at the GPU bound", `engine:
  mode: disaggregated
  workers:
    prefill: {parallelism: {replicas: 4096, tensor: 256}}
    decode: {parallelism: {replicas: 4096, tensor: 256}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			n := allocated(func() {
				_, err = Predict(Inputs{Config: []byte(tc.cfg + "\ntraffic: {stop: {requests: 10}}\n")}, nil)
			})
			if err != nil {
				t.Fatal(err)
			}
			if n > 512<<20 {
				t.Fatalf("the run allocated %d MiB, want < 512", n>>20)
			}
		})
	}
}

// Issue 29 item 9: a run whose pools the workload could fill past the
// budget, or with too many engine cores, or too many long requests held at
// once, is refused before anything is built, with an error naming the keys
// (the CLI exits 2, the Worker answers 400); a search records it as an
// infeasible candidate (config.ErrUnsupported).
func TestItem9MemoryEstimateRefusesBeforeBuilding(t *testing.T) {
	const heavy = "traffic: {source: {type: synthetic, input_tokens: 16000000, output_tokens: 1}, load: {type: concurrency, concurrency: 8}, stop: {requests: 100}}\n"
	for _, tc := range []struct{ name, cfg, want string }{
		{"engine cores", `engine: {workers: {aggregated: {parallelism: {replicas: 4096, attention_data: 256}}}}`,
			"engine.workers.aggregated.parallelism.replicas × engine.workers.aggregated.parallelism.attention_data: 4096 workers × 256 ranks = 1048576 engine cores: 4.0 GiB"},
		{"planner ceiling", `engine: {workers: {aggregated: {parallelism: {attention_data: 1024}}}}
planner: {policy: enabled, max_num_gpus: 1048576}`,
			"planner.max_num_gpus × engine.workers.aggregated.parallelism.attention_data: 1024 workers × 1024 ranks = 1048576 engine cores: 4.0 GiB); give a lower planner.max_num_gpus or attention_data ranks"},
		{"filled pools", "engine: {workers: {aggregated: {parallelism: {replicas: 8}, kv_cache: {block_size: 16, capacity: {type: fixed, blocks: 16777216}}, timing: {type: polynomial}}}}\n" + heavy,
			"engine.workers.aggregated.kv_cache.capacity: 100000200 KV blocks of 16 tokens, as many as the workload's requests can fill: 14.9 GiB"},
		{"filled SGLang pages", "engine: {backend: sglang, workers: {aggregated: {parallelism: {replicas: 64}, kv_cache: {capacity: {type: fixed, blocks: 16777216}}, timing: {type: polynomial}}}}\n" + heavy,
			"engine.workers.aggregated.kv_cache.capacity: 1073741824 KV pages of 1 tokens, 64 engine cores × 16777216"},
		{"disaggregated pools", "engine: {mode: disaggregated, workers: {prefill: {parallelism: {replicas: 4096, tensor: 256}}, decode: {parallelism: {replicas: 4096, tensor: 256}}}}\n" + heavy,
			"engine.workers.prefill.kv_cache.capacity: 25000200 KV blocks of 64 tokens"},
		{"requests in flight", "engine: {workers: {aggregated: {kv_cache: {block_size: 16}, timing: {type: polynomial}}}}\ntraffic: {source: {type: synthetic, input_tokens: 16000000, output_tokens: 2}, load: {type: concurrency, concurrency: 1000}, stop: {requests: 1000}}",
			"traffic.load.concurrency: 1000 requests in the aggregated engines, of up to 1000002 blocks each"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			n := allocated(func() { _, err = Predict(Inputs{Config: []byte(tc.cfg), ConfigName: "big.yaml"}, nil) })
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "big.yaml: the run would build about ") {
				t.Fatalf("err = %v\nwant it to contain %q", err, tc.want)
			}
			if !errors.Is(err, ErrMemoryBudget) || !errors.Is(err, config.ErrUnsupported) {
				t.Errorf("err is not ErrMemoryBudget and config.ErrUnsupported: %v", err)
			}
			if n > 64<<20 {
				t.Errorf("the refusal allocated %d MiB: something was built", n>>20)
			}
		})
	}
}

// Issue 29 item 9: the estimate bounds what runs really hold. Each config
// fills its pool (concurrency 1: every request's blocks stay cached) or
// holds many long requests at once; the live heap, sampled at every
// progress call, stays under the estimate.
func TestItem9EstimateBoundsMeasuredHeap(t *testing.T) {
	const pool = `traffic: {source: {type: synthetic, input_tokens: %d, output_tokens: 1}, load: {type: concurrency, concurrency: %d}, stop: {requests: %d}}
engine: {backend: %s, workers: {aggregated: {parallelism: {replicas: 1}, kv_cache: {block_size: %d, g1_backend: %s, capacity: {type: fixed, blocks: %d}}, timing: {type: polynomial}}}}
router: {policy: %s}`
	for _, tc := range []struct{ name, cfg string }{
		{"native", fmt.Sprintf(pool, 16000, 1, 300, "vllm", 16, "native", 1<<18, "round_robin")},
		{"kvbm", fmt.Sprintf(pool, 16000, 1, 300, "vllm", 16, "kvbm", 1<<18, "round_robin")},
		{"native, KV router", fmt.Sprintf(pool, 16000, 1, 300, "vllm", 16, "native", 1<<18, "kv_router")},
		{"sglang pages of 16, KV router", fmt.Sprintf(pool, 16000, 1, 300, "sglang", 16, "native", 1<<18, "kv_router")},
		{"sglang pages of 1", fmt.Sprintf(pool, 160, 1, 2000, "sglang", 1, "native", 1<<18, "round_robin")},
		{"sglang pages of 1, KV router", fmt.Sprintf(pool, 160, 1, 2000, "sglang", 1, "native", 1<<18, "kv_router")},
		{"vllm, 300 requests waiting", fmt.Sprintf(pool, 16000, 300, 300, "vllm", 16, "native", 1100, "round_robin")},
		{"sglang, 100 requests waiting", fmt.Sprintf(pool, 16000, 100, 100, "sglang", 1, "native", 17000, "round_robin")},
		{"sglang events, 100 requests waiting", fmt.Sprintf(pool, 16000, 100, 100, "sglang", 1, "native", 17000, "kv_router")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Prepare(Inputs{Config: []byte(tc.cfg)})
			if err != nil {
				t.Fatal(err)
			}
			var terms []memTerm
			for _, r := range roles(&p.cfg) {
				ec, err := p.poolConfig(&p.cfg, r, p.wl, &cluster{})
				if err != nil {
					t.Fatal(err)
				}
				terms = append(terms, poolMemory(&p.cfg, r, &ec, p.wl)...)
			}
			estimate := 0.0
			for _, m := range terms {
				estimate += m.bytes
			}
			base := liveHeap()
			var peak uint64
			if _, err := p.Run(nil, func(Progress) bool {
				peak = max(peak, liveHeap())
				return true
			}); err != nil {
				t.Fatal(err)
			}
			held := float64(peak) - float64(base)
			t.Logf("held %.1f MiB, estimated %.1f MiB", held/(1<<20), estimate/(1<<20))
			if held > estimate {
				t.Fatalf("the run held %.1f MiB, more than its estimate of %.1f MiB", held/(1<<20), estimate/(1<<20))
			}
		})
	}
}

func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// Issue 29 item 9: runs of the documented shapes stay inside the budget:
// the benchmarks' replays of the whole conversation trace, 16-token KVBM
// blocks and SGLang's one-token pages behind the KV router (the largest:
// 16 workers' pools sized from H100 memory fill with the trace).
func TestItem9EstimateAdmitsWholeTraceRuns(t *testing.T) {
	trace := sharedTrace(t, "mooncake/conversation_trace.jsonl")
	for _, cfg := range []string{
		benchConfig,
		benchConfigRoofline,
		"engine: {workers: {aggregated: {parallelism: {replicas: 8}, kv_cache: {block_size: 16, g1_backend: kvbm}}}}\nrouter: {policy: kv_router}",
		"engine: {backend: sglang, workers: {aggregated: {parallelism: {replicas: 16}}}}\nrouter: {policy: kv_router}",
	} {
		p, err := Prepare(Inputs{Config: []byte(cfg), Trace: trace, TraceName: "conversation_trace.jsonl"})
		if err != nil {
			t.Fatal(err)
		}
		total := 0.0
		for _, r := range roles(&p.cfg) {
			ec, err := p.poolConfig(&p.cfg, r, p.wl, &cluster{})
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range poolMemory(&p.cfg, r, &ec, p.wl) {
				total += m.bytes
			}
		}
		t.Logf("estimated %.0f MiB: %s", total/(1<<20), strings.ReplaceAll(cfg, "\n", " "))
		if total > MemoryBudget {
			t.Errorf("%s\nestimated %.0f MiB, more than the budget", cfg, total/(1<<20))
		}
	}
}

// Issue 29 item 9: a service bounds the state a run may build below the
// page's budget (a Workers isolate has 128 MB): past Limits.MaxStateBytes
// the run is ErrTooLarge (413), naming the keys and the way out, before
// anything is built; the same run without the limit runs.
func TestItem9ServiceStateLimitIsTooLarge(t *testing.T) {
	cfg := []byte("engine: {workers: {aggregated: {parallelism: {replicas: 4096, attention_data: 16}}}}\ntraffic: {stop: {requests: 10}}\n")
	var err error
	n := allocated(func() {
		_, err = Predict(Inputs{Config: cfg, ConfigName: "c.yaml", Limits: Limits{MaxStateBytes: 32 << 20}}, nil)
	})
	if !errors.Is(err, ErrTooLarge) || errors.Is(err, ErrMemoryBudget) {
		t.Fatalf("err = %v, want ErrTooLarge and not ErrMemoryBudget", err)
	}
	for _, want := range []string{"c.yaml: the run would build about 256.0 MiB of simulator state, this service runs at most 32.0 MiB",
		"parallelism.replicas × engine.workers.aggregated.parallelism.attention_data: 4096 workers × 16 ranks", "use the CLI or the page"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v\nwant it to contain %q", err, want)
		}
	}
	if n > 64<<20 {
		t.Errorf("the refusal allocated %d MiB: it must come before the cluster is built", n>>20)
	}
	if _, err := Predict(Inputs{Config: cfg, Limits: Limits{MaxStateBytes: 512 << 20}}, nil); err != nil {
		t.Fatalf("under a larger limit: %v", err)
	}
}
