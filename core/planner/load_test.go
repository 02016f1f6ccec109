package planner

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// loadSnap is a prefill pool of n active workers (ids 0..n−1) plus
// starting ones, each with queued prompt tokens waiting and passes whose
// time is exactly 10 ms + 0.02 ms per prefill token (512..4096 tokens).
func loadSnap(now float64, n, starting, queued, passes, tick int) Snapshot {
	ps := PoolState{Active: n, Starting: starting}
	for w := range n {
		ps.Workers = append(ps.Workers, WorkerLoad{ID: w, Waiting: queued / 2000, QueuedPrefillTokens: queued})
		for j := range passes {
			tok := 512 * (1 + (j+tick+w)%8)
			ps.Passes = append(ps.Passes, PassSample{Worker: w, EndMs: now, Ms: 10 + 0.02*float64(tok), PrefillRequests: 1, PrefillTokens: tok})
		}
	}
	return Snapshot{NowMs: now, Pools: []PoolState{ps}, Work: true,
		Traffic: Traffic{IntervalS: 5, Requests: 10, MeanISL: 2000, MeanOSL: 200, KVHitRate: 0, AcceptLength: 1,
			MeanTTFTMs: math.NaN(), MeanITLMs: math.NaN()}}
}

// loadConfig is load-based scaling alone, 500 ms TTFT and 50 ms ITL, 8 GPUs.
func loadConfig() Config {
	c := slaConfig()
	c.Load, c.Throughput = true, false
	c.ScaleDownTicks = 1 // each decision on its own (TestLoadScaleDownWaits has the streak)
	// No cool-down after an add: these tests take each decision on its
	// own (TestItem31_1Cooldown has the hysteresis, issue 31 item 1).
	c.ScaleDownCooldownS = 0.001
	return c
}

// Scale-down waits for ScaleDownTicks low estimates in a row; a high one
// resets the streak.
func TestLoadScaleDownWaits(t *testing.T) {
	c := loadConfig()
	c.ScaleDownTicks = 3
	p := mustNew(t, c, prefillPool())
	var got []int
	for i, queued := range []int{0, 0, 40_000, 0, 0, 0} {
		d := p.Tick(loadSnap(float64(5000*(i+1)), 3, 0, queued, 8, 0))
		got = append(got, d.Targets[0])
	}
	if want := []int{3, 3, 4, 3, 3, 2}; !slices.Equal(got, want) {
		t.Errorf("targets %v, want %v", got, want)
	}
}

func prefillPool() []Pool {
	return []Pool{{Name: "prefill", GPUsPerWorker: 1, MinWorkers: 1, MaxBatchedTokens: 8192}}
}

// TestLoadScalesWithQueue grows the cluster's queue, then drains it: the
// planner adds a worker per tick while the best worker's estimate is over
// the SLA, stops at the GPU ceiling, and gives the workers back one by one
// down to the minimum once the load is gone.
func TestLoadScalesWithQueue(t *testing.T) {
	c := loadConfig()
	p := mustNew(t, c, prefillPool())
	n, now := 1, p.FirstMs()
	var path []int
	firstUp := -1
	for tick := range 40 {
		total := 0 // the cluster's queued tokens
		switch {
		case tick < 20:
			total = 30_000 * tick
		case tick < 25:
			total = 30_000 * (25 - tick) * 4
		}
		d := p.Tick(loadSnap(now, n, 0, total/n, 8, tick))
		if d.Targets[0] > n && firstUp < 0 {
			firstUp = tick
		}
		if d := d.Targets[0] - n; d > 1 || d < -1 {
			t.Fatalf("tick %d: moved by %d", tick, d)
		}
		if d.Targets[0] < 1 || d.Targets[0] > 8 {
			t.Fatalf("tick %d: target %d outside [1, 8]", tick, d.Targets[0])
		}
		if math.IsNaN(d.Diag.EstTTFTMs) || !math.IsNaN(d.Diag.EstITLMs) {
			t.Fatalf("tick %d: estimates %v, %v", tick, d.Diag.EstTTFTMs, d.Diag.EstITLMs)
		}
		n = d.Targets[0]
		path = append(path, n)
		now = d.NextMs
	}
	// 30,000 tokens a tick outrun one worker's 500 ms from the second tick
	// (32,000 tokens with the new prompt: 3 full passes of 8,192 and one of
	// 7,424, 680 ms).
	if firstUp < 0 || firstUp > 3 {
		t.Errorf("first scale-up at tick %d, path %v", firstUp, path)
	}
	if peak := maxOf(path); peak != 8 {
		t.Errorf("peak %d workers, want the 8-GPU ceiling; path %v", peak, path)
	}
	if last := path[len(path)-1]; last != 1 {
		t.Errorf("ended with %d workers, want 1; path %v", last, path)
	}
}

func maxOf(v []int) int {
	m := v[0]
	for _, x := range v {
		m = max(m, x)
	}
	return m
}

func TestLoadDecisions(t *testing.T) {
	for _, tc := range []struct {
		name       string
		cfg        func(*Config)
		n, queued  int // workers, queued tokens per worker
		passes     int // per worker
		starting   int
		want       int
		reasonPart string
	}{
		// 2,000 + 40,000 tokens: 5 passes of 8,192 and one of 1,040: 900 ms.
		{"over the SLA", nil, 2, 40_000, 8, 0, 3, "est TTFT 900 ms > 500 ms SLA: prefill +1"},
		// 22,000 tokens: 2·173.84 + 122.32 = 470 ms; at one worker fewer
		// 44,000 → 5·173.84 + 81.52 = 951 ms: hold.
		{"under, but not at one fewer", nil, 2, 20_000, 8, 0, 2, "est TTFT 470 ms: prefill hold"},
		// Idle: a lone prompt takes 50 ms < 400 ms at one worker fewer.
		{"idle", nil, 3, 0, 8, 0, 2, "est TTFT 50 ms at 2 workers < 80% of SLA: prefill -1"},
		{"idle at the minimum", func(c *Config) {}, 1, 0, 8, 0, 1, "hold at its lower bound of 1"},
		{"never down at sensitivity 0", func(c *Config) { c.ScaleDownSensitivity = 0 }, 3, 0, 8, 0, 3, "prefill hold"},
		{"too few passes", nil, 1, 1 << 20, 2, 0, 1, "prefill hold: 2/5 passes observed"},
		{"waiting for a startup", nil, 2, 1 << 20, 8, 1, 3, "prefill hold: 1 worker starting"},
		{"at the GPU ceiling", func(c *Config) { c.MaxGPUs = 2 }, 2, 1 << 20, 8, 0, 2, "prefill hold at the 2-GPU ceiling"},
		{"no TTFT bound", func(c *Config) { c.TTFTMs = 0 }, 2, 1 << 20, 8, 0, 2, "prefill hold: no SLA bound applies"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := loadConfig()
			if tc.cfg != nil {
				tc.cfg(&c)
			}
			p := mustNew(t, c, prefillPool())
			d := p.Tick(loadSnap(5000, tc.n, tc.starting, tc.queued, tc.passes, 0))
			if d.Targets[0] != tc.want || !strings.Contains(d.Reason, tc.reasonPart) {
				t.Errorf("target %d, reason %q; want %d, %q", d.Targets[0], d.Reason, tc.want, tc.reasonPart)
			}
		})
	}
}

// decodeSnap is a decode pool whose passes take 5 ms + 1e-4 ms per KV token.
func decodeSnap(n, kvPerWorker int) Snapshot {
	ps := PoolState{Active: n}
	for w := range n {
		ps.Workers = append(ps.Workers, WorkerLoad{ID: w, Running: 50, ActiveKVTokens: kvPerWorker})
		for j := range 8 {
			kv := 50_000 * (1 + j)
			ps.Passes = append(ps.Passes, PassSample{Worker: w, Ms: 5 + 1e-4*float64(kv), DecodeRequests: 20, DecodeKVTokens: kv})
		}
	}
	return Snapshot{NowMs: 5000, Pools: []PoolState{ps}, Work: true,
		Traffic: Traffic{IntervalS: 5, Requests: 10, MeanISL: 2000, MeanOSL: 200, KVHitRate: math.NaN(), AcceptLength: math.NaN()}}
}

func TestLoadDecode(t *testing.T) {
	pools := []Pool{{Name: "decode", GPUsPerWorker: 1, KVTokens: 1 << 20}}
	for _, tc := range []struct {
		n, kv, want int
		reason      string
	}{
		// 5 + 1e-4 × (500,000 + 2,100) = 55.2 ms > 50.
		{2, 500_000, 3, "est ITL 55.2 ms > 50 ms SLA: decode +1"},
		// 5 + 1e-4 × 302,100 = 35.2 ms; one fewer: 5 + 1e-4 × 602,100 = 65.2: hold.
		{2, 300_000, 2, "est ITL 35.2 ms: decode hold"},
		// One fewer: 5 + 1e-4 × (150,000 + 2,100) = 20.2 < 40.
		{3, 100_000, 2, "est ITL 20.2 ms at 2 workers < 80% of SLA: decode -1"},
	} {
		p := mustNew(t, loadConfig(), pools)
		d := p.Tick(decodeSnap(tc.n, tc.kv))
		if d.Targets[0] != tc.want || !strings.Contains(d.Reason, tc.reason) {
			t.Errorf("%d workers at %d KV: target %d, reason %q; want %d, %q", tc.n, tc.kv, d.Targets[0], d.Reason, tc.want, tc.reason)
		}
		if !math.IsNaN(d.Diag.EstTTFTMs) || math.IsNaN(d.Diag.EstITLMs) {
			t.Errorf("estimates %v, %v", d.Diag.EstTTFTMs, d.Diag.EstITLMs)
		}
	}
	// The spread load must fit one worker's KV cache to scale down.
	small := []Pool{{Name: "decode", GPUsPerWorker: 1, KVTokens: 150_000}}
	p := mustNew(t, loadConfig(), small)
	if d := p.Tick(decodeSnap(3, 100_000)); d.Targets[0] != 3 {
		t.Errorf("scaled down into a KV cache too small: %v (%s)", d.Targets, d.Reason)
	}
}

// aggSnap is an aggregated pool whose passes take exactly
// 10 ms + 0.02 ms per prefill token + 1e-4 ms per decode KV token.
func aggSnap(n, queued, kv int) Snapshot {
	ps := PoolState{Active: n}
	for w := range n {
		ps.Workers = append(ps.Workers, WorkerLoad{ID: w, Waiting: queued / 2000, QueuedPrefillTokens: queued, ActiveKVTokens: kv})
		for j := range 12 {
			pre, dec := 512*(j%4), 40_000*(1+j%3)
			ps.Passes = append(ps.Passes, PassSample{Worker: w, Ms: 10 + 0.02*float64(pre) + 1e-4*float64(dec),
				PrefillRequests: min(pre, 1), PrefillTokens: pre, DecodeRequests: 16, DecodeKVTokens: dec})
		}
	}
	return Snapshot{NowMs: 5000, Pools: []PoolState{ps}, Work: true,
		Traffic: Traffic{IntervalS: 5, Requests: 10, MeanISL: 2000, MeanOSL: 200, KVHitRate: 0, AcceptLength: 1}}
}

func TestLoadAggregated(t *testing.T) {
	pools := []Pool{{Name: "aggregated", GPUsPerWorker: 1, MaxBatchedTokens: 8192}}
	c := loadConfig()
	c.ITLMs = 100
	for _, tc := range []struct {
		name          string
		n, queued, kv int
		want          int
		reason        string
	}{
		{"TTFT over", 2, 60_000, 10_000, 3, "est TTFT"},
		{"ITL over", 2, 0, 900_000, 3, "est ITL"},
		{"both low", 3, 0, 10_000, 2, "aggregated -1"},
		// TTFT is low, but at one worker fewer ITL would be 10 + 0.02 ×
		// mean prefill + 1e-4 × (600,000 + 2,100) > 80 ms.
		{"ITL blocks the way down", 2, 0, 300_000, 2, "aggregated hold"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := mustNew(t, c, pools)
			d := p.Tick(aggSnap(tc.n, tc.queued, tc.kv))
			if d.Targets[0] != tc.want || !strings.Contains(d.Reason, tc.reason) {
				t.Errorf("target %d, reason %q; want %d, %q", d.Targets[0], d.Reason, tc.want, tc.reason)
			}
			if math.IsNaN(d.Diag.EstTTFTMs) || math.IsNaN(d.Diag.EstITLMs) {
				t.Errorf("estimates %v, %v", d.Diag.EstTTFTMs, d.Diag.EstITLMs)
			}
		})
	}
}

// TestLoadBudget overloads both pools of a disaggregated cluster: the
// first pool in order takes the last GPUs, the total never passes the
// ceiling.
func TestLoadBudget(t *testing.T) {
	c := loadConfig()
	c.MaxGPUs = 10
	pools := []Pool{{Name: "prefill", GPUsPerWorker: 2, MaxBatchedTokens: 8192}, {Name: "decode", GPUsPerWorker: 2, KVTokens: 1 << 22}}
	p := mustNew(t, c, pools)
	n := []int{1, 1}
	for tick := range 6 {
		pre := loadSnap(float64(5000*(tick+1)), n[0], 0, 1<<20, 8, tick).Pools[0]
		dec := decodeSnap(n[1], 2_000_000).Pools[0]
		for i := range dec.Workers {
			dec.Workers[i].ID += 100
		}
		for i := range dec.Passes {
			dec.Passes[i].Worker += 100
		}
		d := p.Tick(Snapshot{NowMs: float64(5000 * (tick + 1)), Pools: []PoolState{pre, dec}, Work: true,
			Traffic: Traffic{IntervalS: 5, Requests: 1, MeanISL: 2000, MeanOSL: 200}})
		if g := 2*d.Targets[0] + 2*d.Targets[1]; g > 10 {
			t.Fatalf("tick %d: %v takes %d GPUs", tick, d.Targets, g)
		}
		n = d.Targets
	}
	if n[0] != 3 || n[1] != 2 {
		t.Errorf("ended at %v, want [3 2] (both to 2, then prefill first to the last pair)", n)
	}
}

// TestLoadFloor: in hybrid mode load-based scaling never goes below the
// throughput floor.
func TestLoadFloor(t *testing.T) {
	c := slaConfig()
	c.Load, c.Throughput, c.Predictor = true, true, "constant"
	c.ScaleDownTicks = 1
	pools := prefillPool()
	pools[0].Model = fixedModel
	pools[0].MaxSeqs = 1
	p := mustNew(t, c, pools)
	p.pools[0].floor = 3
	d := p.Tick(loadSnap(5000, 4, 0, 0, 8, 0))
	if d.Targets[0] != 3 {
		t.Fatalf("target %d, want 3 (%s)", d.Targets[0], d.Reason)
	}
	d = p.Tick(loadSnap(10_000, 3, 0, 0, 8, 1))
	if d.Targets[0] != 3 || !strings.Contains(d.Reason, "lower bound of 3") || d.Diag.Floor[0] != 3 {
		t.Errorf("target %d floor %v, reason %q; want to hold at the floor 3", d.Targets[0], d.Diag.Floor, d.Reason)
	}
}
