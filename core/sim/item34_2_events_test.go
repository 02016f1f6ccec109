package sim

import (
	"fmt"
	"testing"

	"github.com/dynosim/dynosim-web/core/engine"
	"github.com/dynosim/dynosim-web/timing"
)

// eventKeeper keeps every pass's KV events as the live hub does (the
// slices themselves, not copies) beside what they were when published.
type eventKeeper struct {
	clock
	kept []engine.Pass
	want []string
}

func (k *eventKeeper) PassEnded(w int, p *engine.Pass) {
	k.clock.PassEnded(w, p)
	if len(p.Events) > 0 {
		k.kept = append(k.kept, engine.Pass{Events: p.Events})
		k.want = append(k.want, fmt.Sprintf("%+v", p.Events))
	}
}

// TestItem34_2EventBuffersLive: the replay's KV event logs reuse their
// buffers (engine.Config.TransientEvents), but a live deployment's hub
// keeps the events it publishes, so its workers' logs must not: every
// batch a live run handed out is intact after the run (the Mooncake
// conversation trace's first 150 requests on 2 small-cache workers, so
// blocks are stored and evicted; vLLM and SGLang cores).
func TestItem34_2EventBuffersLive(t *testing.T) {
	data := sharedTrace(t, "mooncake/conversation_trace.jsonl")
	for _, backend := range []string{"vllm", "sglang"} {
		t.Run(backend, func(t *testing.T) {
			cfg := `
traffic:
  source: {type: trace, format: mooncake, block_size: 512}
  load: {type: trace_timestamps, speedup: 5.0}
  stop: {requests: 150}
engine:
  backend: ` + backend + `
  workers:
    aggregated:
      parallelism: {replicas: 2}
      kv_cache: {block_size: 64, capacity: {blocks: 3000}}
router: {policy: kv_router}
`
			p, err := Prepare(Inputs{Config: []byte(cfg), Trace: data, TraceName: "conv.jsonl"})
			if err != nil {
				t.Fatal(err)
			}
			k := &eventKeeper{}
			l, err := NewLive(Inputs{Config: []byte(cfg)}, k)
			if err != nil {
				t.Fatal(err)
			}
			var prompt []uint32
			// the live driver submits what it is given: the trace's first 150
			// requests (stop bounds a replay, not this loop)
			n := min(p.wl.Requests(), 150)
			for i := range n {
				s := &p.wl.Sessions[p.wl.ByStart[i]]
				if _, err := l.RunUntil(s.Start); err != nil {
					t.Fatal(err)
				}
				prompt = p.wl.Prompt(prompt[:0], &s.Turns[0])
				if _, err := l.Submit(prompt, s.Turns[0].Output, s.Turns[0].Priority); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := l.RunUntil(timing.FromMs(1e9)); err != nil {
				t.Fatal(err)
			}
			if len(k.kept) < 100 {
				t.Fatalf("only %d passes with events", len(k.kept))
			}
			for i := range k.kept {
				if got := fmt.Sprintf("%+v", k.kept[i].Events); got != k.want[i] {
					t.Fatalf("batch %d of %d was overwritten after it was published", i, len(k.kept))
				}
			}
		})
	}
}
