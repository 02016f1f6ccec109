package planner

import (
	"math"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/timing"
)

// fixedModel charges 100 ms a prefill pass and 10 ms a decode step.
var fixedModel = timing.Fixed{Prefill: 100, Decode: 10}

func TestCapacities(t *testing.T) {
	for _, tc := range []struct {
		name      string
		pool      Pool
		hit, acc  float64
		ttft, itl float64
		prefill   float64 // tokens/s
		decode    float64
		ok        bool
	}{
		// ISL 4,096 and OSL 256 throughout. One prompt a pass (max
		// sequences 1): 4,096 / 0.1 s; decode one sequence a 10 ms step.
		{"one prompt a pass", Pool{Model: fixedModel, MaxBatchedTokens: 8192, MaxSeqs: 1, KVTokens: 1_000_000},
			0, 1, 500, 50, 40_960, 100, true},
		// Four prompts fit 16,384 tokens: 4 × 4,096 / 0.1 s. Decode: ctx =
		// 4,096 + 128 = 4,224, ⌊1,000,000 / 4,224⌋ = 236 sequences a 10 ms
		// step: 23,600 tokens/s.
		{"batched prompts", Pool{Model: fixedModel, MaxBatchedTokens: 16384, KVTokens: 1_000_000},
			0, 1, 500, 50, 163_840, 23_600, true},
		// Chunks of 1,024: four passes, 400 ms ≤ 500: 4,096 / 0.4 s.
		{"chunked prompt", Pool{Model: fixedModel, MaxBatchedTokens: 1024, MaxSeqs: 256, KVTokens: 1_000_000},
			0, 1, 500, 50, 10_240, 23_600, true},
		// Half cached: 2,048 tokens computed a 100 ms pass.
		{"cache hits", Pool{Model: fixedModel, MaxBatchedTokens: 8192, MaxSeqs: 1, KVTokens: 1_000_000},
			0.5, 1, 500, 50, 20_480, 100, true},
		// No token budget: 256 prompts a pass. Two tokens a forward:
		// 236 × 2 / 0.01 s.
		{"speculation", Pool{Model: fixedModel, MaxSeqs: 256, KVTokens: 1_000_000},
			0, 2, 500, 50, 256 * 4096 * 10, 47_200, true},
		// Speed-up 2 halves both times.
		{"speed-up", Pool{Model: fixedModel, MaxBatchedTokens: 4096, MaxSeqs: 256, KVTokens: 1_000_000, Scale: timing.Scale{Speedup: 2, DecodeSpeedup: 1}},
			0, 1, 500, 50, 81_920, 47_200, true},
		// A 100 ms pass misses a 50 ms TTFT even alone, a 10 ms step a 5 ms
		// ITL: batch 1, flagged.
		{"out of reach", Pool{Model: fixedModel, MaxBatchedTokens: 8192, MaxSeqs: 1, KVTokens: 1_000_000},
			0, 1, 50, 5, 40_960, 100, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &pool{Pool: tc.pool}
			pc, okP := prefillCapacity(p, 4096, tc.hit, tc.ttft)
			dc, okD := decodeCapacity(p, 4096, 256, tc.acc, tc.itl)
			if math.Abs(pc-tc.prefill) > 1e-9*tc.prefill || math.Abs(dc-tc.decode) > 1e-9*tc.decode {
				t.Errorf("capacity %v prefill, %v decode tokens/s; want %v, %v", pc, dc, tc.prefill, tc.decode)
			}
			if okP != tc.ok || okD != tc.ok {
				t.Errorf("feasible %v/%v, want %v", okP, okD, tc.ok)
			}
		})
	}
	// All cached, or no prompt: prefill is free.
	if c, ok := prefillCapacity(&pool{Pool: Pool{Model: fixedModel}}, 4096, 1, 500); !math.IsInf(c, 1) || !ok {
		t.Errorf("all cached: %v %v", c, ok)
	}
}

func TestBestBatch(t *testing.T) {
	// A pass costs 10 ms + 1 ms per item: throughput k/(10+k) grows with k,
	// so the largest batch tried within the limit wins.
	ms := func(k int) float64 { return 10 + float64(k) }
	for _, tc := range []struct {
		kmax  int
		limit float64
		want  int
		ok    bool
	}{
		{1, 100, 1, true},
		{50, 100, 50, true},
		{5000, 1e9, 5000, true},
		// Every k to 64, then the 10 % ladder 65, 71, 78, 86, 95…: 86 is
		// the largest tried within 90.
		{5000, 100, 86, true},
		{10, 5, 1, false},
	} {
		if k, _, ok := bestBatch(tc.kmax, ms, tc.limit); k != tc.want || ok != tc.ok {
			t.Errorf("kmax %d limit %v: k %d ok %v, want %d %v", tc.kmax, tc.limit, k, ok, tc.want, tc.ok)
		}
	}
	// Throughput that peaks inside the range (a quadratic pass time) is
	// found there, not at the largest batch that fits.
	quad := func(k int) float64 { return 100 + float64(k*k) }
	if k, _, _ := bestBatch(64, quad, 1e9); k != 10 {
		t.Errorf("quadratic: k %d, want 10", k)
	}
}

// disagg is a prefill pool (one prompt a pass) and a decode pool, one GPU
// a worker, on fixedModel.
func disagg() []Pool {
	return []Pool{
		{Name: "prefill", GPUsPerWorker: 1, Model: fixedModel, MaxBatchedTokens: 8192, MaxSeqs: 1, KVTokens: 1_000_000},
		{Name: "decode", GPUsPerWorker: 1, Model: fixedModel, MaxBatchedTokens: 8192, MaxSeqs: 256, KVTokens: 1_000_000},
	}
}

// thrSnap is a throughput tick at 180 s with rate req/s completed over it.
func thrSnap(pools int, rate, isl, osl float64) Snapshot {
	s := Snapshot{NowMs: 180_000, Work: true, Pools: make([]PoolState, pools),
		Traffic: Traffic{IntervalS: 180, Requests: int(math.Round(rate * 180)), MeanISL: isl, MeanOSL: osl,
			KVHitRate: 0, AcceptLength: 1, MeanTTFTMs: 200, MeanITLMs: 20}}
	for i := range s.Pools {
		s.Pools[i] = PoolState{Active: 1}
	}
	return s
}

func TestThroughputReplicas(t *testing.T) {
	agg := []Pool{{Name: "aggregated", GPUsPerWorker: 1, Model: fixedModel, MaxBatchedTokens: 8192, MaxSeqs: 256, KVTokens: 1_000_000}}
	for _, tc := range []struct {
		name   string
		pools  []Pool
		rate   float64
		isl    float64
		osl    float64
		gpus   int
		want   []int
		reason string
	}{
		// Prefill 25 × 4,096 = 102,400 tokens/s over 40,960: 2.5 → 3.
		// Decode 25 × 256 = 6,400 over 23,600: 0.27 → 1.
		{"disaggregated", disagg(), 25, 4096, 256, 8, []int{3, 1},
			"throughput: predicted 25 req/s × 4,096 ISL needs 3 prefill workers; 25 req/s × 256 OSL needs 1 decode worker"},
		// Exactly 5.0 prefill workers stay 5.
		{"exact", disagg(), 50, 4096, 256, 8, []int{5, 1}, "needs 5 prefill workers"},
		// Two prompts a pass: 81,920 tokens/s prefill; 20 req/s need
		// 81,920/81,920 + 5,120/23,600 = 1.22 aggregated workers → 2.
		{"aggregated", agg, 20, 4096, 256, 8, []int{2}, "4,096 ISL / 256 OSL needs 2 aggregated workers"},
		// 20 prefill and 3 decode workers want 23 GPUs of 8: ⌊20·8/23⌋ = 6
		// and ⌊3·8/23⌋ = 1, then the last GPU to the pool furthest from its
		// want (6/20 < 1/3).
		{"over budget", disagg(), 200, 4096, 256, 8, []int{7, 1}, "needs 20 prefill workers; 200 req/s × 256 OSL needs 3 decode workers (capped at 8 GPUs: prefill 7, decode 1)"},
		{"no traffic", disagg(), 0, 4096, 256, 8, []int{1, 1}, "needs 1 prefill worker"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := slaConfig()
			c.Predictor, c.MaxGPUs = "constant", tc.gpus
			p := mustNew(t, c, tc.pools)
			d := p.Tick(thrSnap(len(tc.pools), tc.rate, tc.isl, tc.osl))
			if !equal(d.Targets, tc.want) || !strings.Contains(d.Reason, tc.reason) {
				t.Errorf("targets %v, reason %q; want %v, %q", d.Targets, d.Reason, tc.want, tc.reason)
			}
			if !equal(d.Diag.Floor, tc.want) {
				t.Errorf("floors %v, want %v", d.Diag.Floor, tc.want)
			}
			isl := tc.isl
			if tc.rate == 0 {
				isl = 0 // no request completed: no ISL seen
			}
			if d.Diag.PredRate != tc.rate || d.Diag.PredISL != isl || d.Diag.ObservedRequests != math.Round(tc.rate*180) ||
				d.Diag.PredRequests != tc.rate*180 || !math.IsNaN(d.Diag.EstTTFTMs) {
				t.Errorf("diagnostics %+v", d.Diag)
			}
		})
	}
}

// TestThroughputWindow: in hybrid mode the throughput tick predicts from
// every load tick's traffic since the last throughput tick, and a floor
// above the current workers raises them.
func TestThroughputWindow(t *testing.T) {
	c := slaConfig()
	c.Load, c.Predictor, c.ThroughputIntervalS, c.LoadIntervalS = true, "constant", 20, 5
	p := mustNew(t, c, disagg())
	var d Decision
	for tick := 1; tick <= 4; tick++ {
		s := thrSnap(2, 0, 4096, 256)
		s.NowMs = float64(5000 * tick)
		s.Traffic.IntervalS, s.Traffic.Requests = 5, 125*tick // 1,250 requests in 20 s: 62.5 req/s
		d = p.Tick(s)
	}
	// 62.5 × 4,096 / 40,960 = 6.25 → 7 prefill; 62.5 × 256 / 23,600 = 0.68 → 1.
	if d.Diag.ObservedRequests != 1250 || d.Diag.ObservedRate != 62.5 {
		t.Errorf("observed %v requests, %v req/s; want 1250, 62.5", d.Diag.ObservedRequests, d.Diag.ObservedRate)
	}
	if !equal(d.Targets, []int{7, 1}) || !strings.Contains(d.Reason, "throughput floor") || !strings.Contains(d.Reason, "raised to the throughput floor") {
		t.Errorf("targets %v, reason %q", d.Targets, d.Reason)
	}
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
