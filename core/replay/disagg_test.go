package replay

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/core/engine"
	"github.com/dynosim/dynosim-web/core/handoff"
	"github.com/dynosim/dynosim-web/core/report"
	"github.com/dynosim/dynosim-web/core/router"
	"github.com/dynosim/dynosim-web/timing"
)

// pd is a disaggregated replay's pools: prefill workers then decode
// workers of policy p (vLLM or SGLang), 4-token blocks, round robin.
type pd struct {
	policy            engine.Policy
	prefill, decode   int // workers
	pBlocks, dBlocks  int // KV blocks per worker
	direct            bool
	fullPrompt, delay bool // charge the whole prompt; 1e6 B/token at 1 GB/s
}

func (c pd) build(t *testing.T) ([]Pool, *Transfer) {
	t.Helper()
	link := engine.Handoff{KVBytesPerToken: 1e6}
	if c.delay {
		link.BandwidthGBps = 1
	}
	x := &Transfer{Direct: c.direct, FullPrompt: c.fullPrompt, Link: link}
	if c.policy == engine.SGLang {
		x.Order = handoff.DestinationFirst
	}
	base := engine.Config{Policy: c.policy, BlockSize: 4, ChunkedPrefill: true, PrefixCaching: true, Model: timing.Polynomial{}, SGLang: engine.DefaultSGLang()}
	p, d := base, base
	p.NumBlocks, d.NumBlocks = c.pBlocks, c.dBlocks
	hold := link
	hold.Hold = !c.direct
	p.Prefill, d.Decode = &hold, true
	return []Pool{
		{Name: "prefill", Workers: workers(t, c.prefill, p), Router: router.NewRoundRobin(), GPUs: 1},
		{Name: "decode", Workers: workers(t, c.decode, d), Router: router.NewRoundRobin(), GPUs: 2},
	}, x
}

// run replays text (4-token trace blocks) and checks that every worker
// ends empty: no request, hold or reservation survives the run.
func (c pd) run(t *testing.T, text string) *report.Report {
	t.Helper()
	pools, x := c.build(t)
	rep, err := Run(trace(t, text, 4), pools, Options{Capture: true, Transfer: x})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pools {
		for i, w := range p.Workers {
			if m := w.Metrics(); m.Holds != 0 || m.Reserved != 0 || m.Running != 0 || m.Waiting != 0 || c.policy != engine.SGLang && m.ActiveBlocks != 0 {
				t.Fatalf("%s worker %d ends with %+v", p.Name, i, m)
			}
		}
	}
	return rep
}

func row(at float64, in, out int, ids ...int) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = fmt.Sprint(id)
	}
	return fmt.Sprintf(`{"timestamp":%g,"input_length":%d,"output_length":%d,"hash_ids":[%s]}`, at, in, out, strings.Join(s, ","))
}

func blocks(from, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = from + i
	}
	return out
}

var backends = []engine.Policy{engine.VLLM, engine.SGLang}

// H9 (spec §7.6): a 128-token request at 1 GB/s and 1e6 B/token — the
// decode-visible TTFT grows by at least 120 ms and the handoff by exactly
// 128.0 ms against no delay; the report is decode-only (every output token
// from the decode worker, the prefill copy hidden).
func TestH9DisaggDelay(t *testing.T) {
	for _, p := range backends {
		for _, direct := range []bool{false, true} {
			text := row(0, 128, 4, blocks(1, 32)...)
			c := pd{policy: p, prefill: 1, decode: 1, pBlocks: 256, dBlocks: 256, direct: direct, fullPrompt: true}
			free := c.run(t, text).Requests()[0]
			c.delay = true
			slow := c.run(t, text).Requests()[0]
			name := fmt.Sprintf("%v direct=%v", p, direct)
			if d := *slow.TTFTMs - *free.TTFTMs; d < 120 {
				t.Errorf("%s: TTFT grew by %v ms, want ≥ 120", name, d)
			}
			if *free.KVTransferMs != 0 || *slow.KVTransferMs != 128.0 || *slow.KVTransferBytes != 128e6 || *slow.KVTransferTokens != 128 {
				t.Errorf("%s: handoff %v ms → %v ms (%v bytes), want 0 → 128.0", name, *free.KVTransferMs, *slow.KVTransferMs, *slow.KVTransferBytes)
			}
			if slow.OutputLength != 4 || *slow.PrefillWorker != 0 || *slow.Worker != 1 {
				t.Errorf("%s: record %+v: want 4 tokens, prefill on worker 0, decode on worker 1", name, slow)
			}
		}
	}
}

// H9 destination_missing (spec §7.6): only what the destination lacks is
// charged — 128 ms on a fresh destination, 64 ms after a 64-token request
// seeded it, 0 ms for a prompt fully resident there — and hits only on the
// source side do not reduce it.
func TestH9DestinationMissing(t *testing.T) {
	for _, p := range backends {
		c := pd{policy: p, prefill: 1, decode: 1, pBlocks: 256, dBlocks: 256, delay: true}
		ms := func(text string) []float64 {
			var out []float64
			for _, r := range c.run(t, text).Requests() {
				out = append(out, *r.KVTransferMs)
			}
			return out
		}
		fresh := ms(row(0, 128, 2, blocks(1, 32)...))
		seeded := ms(row(0, 64, 2, blocks(1, 16)...) + "\n" + row(2000, 128, 2, blocks(1, 32)...))
		resident := ms(row(0, 64, 2, blocks(1, 16)...) + "\n" + row(2000, 64, 2, blocks(1, 16)...))
		if fresh[0] != 128 || seeded[1] != 64 || resident[1] != 0 {
			t.Errorf("%v: fresh %v, seeded %v, resident %v; want 128, 64, 0 ms", p, fresh, seeded, resident)
		}
		// Two decode workers in round robin: the second request's prefix is
		// cached on the (single) prefill worker but its decode worker is fresh.
		c.decode = 2
		recs := c.run(t, row(0, 64, 2, blocks(1, 16)...)+"\n"+row(2000, 128, 2, blocks(1, 32)...)).Requests()
		if r := recs[1]; *r.DecodeReusedInputTokens != 0 || *r.KVTransferMs < 128 || r.ReusedInputTokens == 0 {
			t.Errorf("%v: source-only hit: decode reused %v, transfer %v ms, prefill reused %v; want 0, ≥128, > 0",
				p, *r.DecodeReusedInputTokens, *r.KVTransferMs, r.ReusedInputTokens)
		}
	}
}

// The bootstrap orders (spec §7.5): vLLM's destination reserves only after
// the source holds its finished prefill; SGLang's reserves first, so its
// KV is taken while the prefill still runs. Either way the source holds
// its KV until the transfer ends, then releases it.
func TestBootstrapOrders(t *testing.T) {
	for _, p := range backends {
		c := pd{policy: p, prefill: 1, decode: 1, pBlocks: 256, dBlocks: 256, delay: true}
		pools, x := c.build(t)
		l, err := New(trace(t, row(0, 128, 2, blocks(1, 32)...), 4), pools, Options{Capture: true, Transfer: x})
		if err != nil {
			t.Fatal(err)
		}
		src, dst := pools[0].Workers[0], pools[1].Workers[0]
		if _, err := l.RunUntil(0); err != nil {
			t.Fatal(err)
		}
		// t = 0: the prefill runs.
		if got, want := dst.Metrics().Reserved, map[engine.Policy]int{engine.VLLM: 0, engine.SGLang: 1}[p]; got != want {
			t.Errorf("%v: %d reservations while the prefill runs, want %d", p, got, want)
		}
		// Mid-transfer (it takes 128 ms after the prefill): the source
		// holds, the destination has its reservation.
		end := l.q.top().at // the prefill's pass end
		if _, err := l.RunUntil(end + timing.FromMs(64)); err != nil {
			t.Fatal(err)
		}
		if s, d := src.Metrics(), dst.Metrics(); s.Holds != 1 || d.Reserved != 1 || d.ActiveBlocks == 0 {
			t.Errorf("%v: mid-transfer source %+v destination %+v: want a hold and a reservation", p, s, d)
		}
		if _, err := l.RunUntil(end + timing.FromMs(129)); err != nil {
			t.Fatal(err)
		}
		if s, d := src.Metrics(), dst.Metrics(); s.Holds != 0 || d.Reserved != 0 || d.Running != 1 {
			t.Errorf("%v: after the transfer source %+v destination %+v: want released, activated", p, s, d)
		}
	}
}

// Failures release what the other side took (spec §7.4): a prompt the
// destination can never hold fails after vLLM's source holds it; one the
// source can never hold fails after SGLang's destination reserved it.
// Either way the request is rejected with its reason and nothing survives
// (run checks every worker ends empty).
func TestHandoffFailureReleases(t *testing.T) {
	tests := []struct {
		p                engine.Policy
		pBlocks, dBlocks int
	}{
		{engine.VLLM, 256, 16},   // destination too small: the hold is released
		{engine.SGLang, 256, 16}, // destination too small: nothing was submitted
		{engine.SGLang, 16, 256}, // source too small: the reservation is canceled
		{engine.VLLM, 16, 256},   // source too small: nothing was reserved
	}
	for _, tc := range tests {
		text := row(0, 128, 2, blocks(1, 32)...) + "\n" + row(1, 16, 2, blocks(100, 4)...)
		rep := pd{policy: tc.p, prefill: 1, decode: 1, pBlocks: tc.pBlocks, dBlocks: tc.dBlocks, delay: true}.run(t, text)
		r := rep.Requests()
		if r[0].TerminalStatus != "rejected" || *r[0].RejectionReason != "kv_capacity" || r[1].TerminalStatus != "completed" {
			t.Errorf("%v p%d/d%d: %s (%v), %s; want the large one rejected for kv_capacity, the small one completed",
				tc.p, tc.pBlocks, tc.dBlocks, r[0].TerminalStatus, r[0].RejectionReason, r[1].TerminalStatus)
		}
	}
}

// The direct path never holds: the prefill releases at once and decode is
// dispatched after the full-prompt delay, whatever the timing mode.
func TestDirectPathDoesNotHold(t *testing.T) {
	for _, p := range backends {
		c := pd{policy: p, prefill: 1, decode: 1, pBlocks: 256, dBlocks: 256, direct: true, delay: true}
		pools, x := c.build(t)
		l, err := New(trace(t, row(0, 64, 2, blocks(1, 16)...)+"\n"+row(2000, 64, 2, blocks(1, 16)...), 4), pools, Options{Capture: true, Transfer: x})
		if err != nil {
			t.Fatal(err)
		}
		for at := timing.Time(0); at < timing.FromMs(3000); at += timing.FromMs(1) {
			if _, err := l.RunUntil(at); err != nil {
				t.Fatal(err)
			}
			if m := pools[0].Workers[0].Metrics(); m.Holds != 0 {
				t.Fatalf("%v: a hold at %v", p, at)
			}
		}
		if _, err := l.RunUntil(1 << 62); err != nil {
			t.Fatal(err)
		}
		rep, err := l.Report()
		if err != nil {
			t.Fatal(err)
		}
		// The direct path charges the full prompt even when the
		// destination has it cached.
		if r := rep.Requests()[1]; *r.KVTransferMs != 64 {
			t.Errorf("%v: direct transfer %v ms, want the full prompt's 64", p, *r.KVTransferMs)
		}
	}
}
