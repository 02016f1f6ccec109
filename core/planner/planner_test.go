package planner

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/timing"
)

// mustNew builds a planner or fails the test.
func mustNew(t testing.TB, c Config, pools []Pool) *Planner {
	t.Helper()
	p, err := New(c, pools)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// aggPool is one aggregated pool of single-GPU workers.
func aggPool() []Pool {
	return []Pool{{Name: "aggregated", GPUsPerWorker: 1, MinWorkers: 1, Model: timing.Fixed{Prefill: 100, Decode: 10},
		MaxBatchedTokens: 8192, MaxSeqs: 256, KVTokens: 1 << 20}}
}

// idle is a snapshot of n idle aggregated workers at now.
func idle(now float64, n int, work bool) Snapshot {
	ps := PoolState{Active: n}
	for i := range n {
		ps.Workers = append(ps.Workers, WorkerLoad{ID: i})
	}
	return Snapshot{NowMs: now, Pools: []PoolState{ps}, Work: work, Traffic: Traffic{IntervalS: math.NaN(),
		MeanISL: math.NaN(), MeanOSL: math.NaN(), KVHitRate: math.NaN(), AcceptLength: math.NaN(), MeanTTFTMs: math.NaN(), MeanITLMs: math.NaN()}}
}

func TestFirstMs(t *testing.T) {
	for _, tc := range []struct {
		preset string
		want   float64
	}{
		{"throughput_180_5", 180_000},
		{"throughput_600_5", 600_000},
		{"load_180_10", 10_000},
		{"hybrid_600_5", 5_000},
	} {
		c := slaConfig()
		if err := ApplyPreset(tc.preset, &c); err != nil {
			t.Fatal(err)
		}
		if got := mustNew(t, c, aggPool()).FirstMs(); got != tc.want {
			t.Errorf("%s: FirstMs = %v, want %v", tc.preset, got, tc.want)
		}
	}
	c := slaConfig()
	if err := ApplyPreset("disabled", &c); err != nil {
		t.Fatal(err)
	}
	p := mustNew(t, c, aggPool())
	if got := p.FirstMs(); !math.IsNaN(got) {
		t.Errorf("disabled: FirstMs = %v, want NaN", got)
	}
	if d := p.Tick(idle(5000, 1, true)); !math.IsNaN(d.NextMs) || d.Reason != "hold: planner disabled" || d.Targets[0] != 1 {
		t.Errorf("disabled: %+v", d)
	}
}

// TestSchedule follows NextMs tick by tick: the two intervals merge into
// one stream, every tick is strictly in the future, and the modes run
// exactly at their due times.
func TestSchedule(t *testing.T) {
	c := slaConfig()
	c.Load, c.LoadIntervalS, c.ThroughputIntervalS = true, 5, 12
	p := mustNew(t, c, aggPool())
	var got []string
	now := p.FirstMs()
	for range 9 {
		d := p.Tick(idle(now, 1, true))
		kind := ""
		if strings.Contains(d.Reason, "throughput") {
			kind += "T"
		}
		if strings.Contains(d.Reason, "load:") {
			kind += "L"
		}
		got = append(got, fmt.Sprintf("%g%s", now/1000, kind))
		if !(d.NextMs > now) {
			t.Fatalf("at %v: NextMs %v not in the future", now, d.NextMs)
		}
		now = d.NextMs
	}
	want := "5L 10L 12T 15L 20L 24T 25L 30L 35L"
	if s := strings.Join(got, " "); s != want {
		t.Errorf("ticks %s, want %s", s, want)
	}
	if d := p.Tick(idle(now, 1, false)); !math.IsNaN(d.NextMs) {
		t.Errorf("without work: NextMs = %v, want NaN", d.NextMs)
	}
}

func TestScheduleOffGrid(t *testing.T) {
	c := slaConfig()
	c.Throughput, c.Load = false, true
	for _, tc := range []struct {
		now, next float64
		ran       bool
	}{
		{1000, 5000, false},         // early: nothing due
		{4999.9999995, 10000, true}, // within a nanosecond of due
		{17_500, 20_000, true},      // late: the missed ticks are not replayed
		{20_000, 25_000, true},
	} {
		p := mustNew(t, c, aggPool())
		if tc.now > 17_000 {
			p.Tick(idle(5000, 1, true))
		}
		d := p.Tick(idle(tc.now, 1, true))
		if d.NextMs != tc.next || strings.Contains(d.Reason, "load:") != tc.ran {
			t.Errorf("at %v: next %v, reason %q; want next %v, ran %v", tc.now, d.NextMs, d.Reason, tc.next, tc.ran)
		}
	}
	p := mustNew(t, c, aggPool())
	for _, now := range []float64{math.NaN(), math.Inf(1), 1e300} {
		if d := p.Tick(idle(now, 1, true)); !(d.NextMs > now) && !math.IsNaN(d.NextMs) {
			t.Errorf("at %v: NextMs %v", now, d.NextMs)
		}
	}
}

// script drives a planner through a fixed scenario and records every
// decision as text (NaN compares unequal, text does not).
func script(t testing.TB, c Config, pools []Pool) []string {
	p := mustNew(t, c, pools)
	var out []string
	n := 1
	now := p.FirstMs()
	for tick := range 80 {
		queued := 0
		if tick > 10 && tick < 40 {
			queued = 20_000 * (tick - 10)
		}
		s := loadSnap(now, n, 0, queued, 8, tick)
		s.Traffic = Traffic{IntervalS: 5, Requests: 10 + tick%7, MeanISL: 2000 + float64(tick%5)*100, MeanOSL: 200,
			KVHitRate: 0.1, AcceptLength: 1, MeanTTFTMs: 300, MeanITLMs: 20}
		d := p.Tick(s)
		out = append(out, fmt.Sprintf("%+v", d))
		n = d.Targets[0]
		if math.IsNaN(d.NextMs) {
			break
		}
		now = d.NextMs
	}
	return out
}

func TestDeterminism(t *testing.T) {
	for _, preset := range []string{"load_180_5", "throughput_180_5", "hybrid_180_5"} {
		for _, pred := range predictorNames {
			c := slaConfig()
			c.Predictor, c.PredictorLog1p = pred, pred == "kalman"
			if err := ApplyPreset(preset, &c); err != nil {
				t.Fatal(err)
			}
			c.ThroughputIntervalS = 20 // a few throughput ticks within the script
			pools := []Pool{{Name: "prefill", GPUsPerWorker: 1, Model: timing.Polynomial{}, MaxBatchedTokens: 8192, MaxSeqs: 1}}
			a, b := script(t, c, pools), script(t, c, pools)
			if len(a) != len(b) {
				t.Fatalf("%s/%s: %d vs %d decisions", preset, pred, len(a), len(b))
			}
			for i := range a {
				if a[i] != b[i] {
					t.Fatalf("%s/%s: decision %d differs:\n%s\n%s", preset, pred, i, a[i], b[i])
				}
			}
		}
	}
}

// FuzzTick feeds arbitrary snapshots to planners of every mode: Tick never
// panics, answers a target per pool within the minimum and the GPU
// ceiling, and schedules the next tick in the future or not at all.
func FuzzTick(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add([]byte{5, 200, 17, 0, 255, 3, 99, 42, 7, 7, 7, 1, 0, 128})
	f.Add([]byte{6, 3, 250, 250, 250, 250, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := byteReader(data)
		c := slaConfig()
		if err := ApplyPreset(PresetNames[r.n(len(PresetNames))], &c); err != nil {
			t.Fatal(err)
		}
		c.Predictor = predictorNames[r.n(len(predictorNames))]
		c.PredictorLog1p = r.n(2) == 1
		c.MaxGPUs = 1 + r.n(24)
		c.MinObservations = r.n(8)
		c.MaxFPMSamples = 1 + r.n(70)
		c.FPMBucketSize = []int{1, 4, 9, 16}[r.n(4)]
		c.ThroughputIntervalS = []float64{180, 20, 7.5}[r.n(3)]
		c.LoadIntervalS = []float64{5, 1, 1.5}[r.n(3)] // at the floor (planner.MinIntervalS) and just above
		c.ScaleDownSensitivity = float64(r.n(101))
		var models = []timing.Model{timing.Fixed{Prefill: float64(r.n(300)), Decode: float64(r.n(60))}, timing.Polynomial{}}
		var pools []Pool
		if r.n(2) == 0 {
			pools = []Pool{{Name: "aggregated"}}
		} else {
			pools = []Pool{{Name: "prefill"}, {Name: "decode"}}
		}
		for i := range pools {
			p := &pools[i]
			p.GPUsPerWorker, p.MinWorkers, p.Model = 1+r.n(4), r.n(3), models[r.n(2)]
			p.MaxBatchedTokens, p.MaxSeqs, p.KVTokens = r.n(3)*4096, r.n(3)*128, r.n(3)*100_000
			p.Scale = timing.Scale{Speedup: float64(r.n(3))}
		}
		pl, err := New(c, pools)
		if err != nil {
			return // configurations New refuses are its tests' business
		}
		now := pl.FirstMs()
		active := make([]int, len(pools))
		for k := range active {
			active[k] = max(pools[k].MinWorkers, 1)
		}
		id := 0
		for tick := 0; tick < 40 && r.more(); tick++ {
			if r.n(5) == 0 {
				now = float64(r.n(1 << 20)) // any time, even the past
			}
			s := Snapshot{Tick: tick, NowMs: now, Work: r.n(8) != 0, Traffic: Traffic{IntervalS: float64(r.n(200)) - 10,
				Requests: r.n(500) - 5, MeanISL: r.f(9000), MeanOSL: r.f(2000), KVHitRate: r.f(1.2),
				AcceptLength: r.f(4), MeanTTFTMs: r.f(1000), MeanITLMs: r.f(100)}}
			for k := range pools {
				ps := PoolState{Active: active[k], Starting: r.n(2), Draining: r.n(2)}
				for w := range active[k] + ps.Draining {
					ps.Workers = append(ps.Workers, WorkerLoad{ID: id + w, Running: r.n(64), Waiting: r.n(64) - 2,
						QueuedPrefillTokens: r.n(1 << 18), ActiveKVTokens: r.n(1 << 17), Draining: w >= active[k]})
				}
				for range r.n(30) {
					ps.Passes = append(ps.Passes, PassSample{Worker: id + r.n(active[k]+1), Ms: r.f(400) - 1,
						PrefillRequests: r.n(4), PrefillTokens: r.n(16384), DecodeRequests: r.n(256), DecodeKVTokens: r.n(1 << 18)})
				}
				s.Pools = append(s.Pools, ps)
			}
			if r.n(4) == 0 {
				id += r.n(3) // workers come and go
			}
			d := pl.Tick(s)
			if len(d.Targets) != len(pools) {
				t.Fatalf("%d targets for %d pools", len(d.Targets), len(pools))
			}
			gpus := 0
			for k, tg := range d.Targets {
				if tg < max(pools[k].MinWorkers, 1) || tg > c.MaxGPUs/pools[k].GPUsPerWorker {
					t.Fatalf("pool %s: target %d outside [%d, %d] (%s)", pools[k].Name, tg, pools[k].MinWorkers, c.MaxGPUs/pools[k].GPUsPerWorker, d.Reason)
				}
				gpus += tg * pools[k].GPUsPerWorker
				active[k] = tg
			}
			if gpus > c.MaxGPUs {
				t.Fatalf("targets %v take %d GPUs, over %d", d.Targets, gpus, c.MaxGPUs)
			}
			if !math.IsNaN(d.NextMs) && !(d.NextMs > s.NowMs) {
				t.Fatalf("NextMs %v not after %v", d.NextMs, s.NowMs)
			}
			if d.Reason == "" || len(d.Diag.Floor) != len(pools) {
				t.Fatalf("decision without reason or floors: %+v", d)
			}
			if !math.IsNaN(d.NextMs) {
				now = d.NextMs
			}
		}
	})
}

// byteReader hands out small numbers from fuzz data (zeros once spent).
type byteReaderT struct {
	b []byte
	i int
}

func byteReader(b []byte) *byteReaderT { return &byteReaderT{b: b} }

func (r *byteReaderT) more() bool { return r.i < len(r.b) }

// n is a number in [0, m).
func (r *byteReaderT) n(m int) int {
	if m <= 1 {
		return 0
	}
	v := 0
	for k := 0; k < 3 && r.i < len(r.b); k++ {
		v = v<<8 | int(r.b[r.i])
		r.i++
		if v >= m {
			break
		}
	}
	return v % m
}

// f is a float in [0, m), or NaN now and then.
func (r *byteReaderT) f(m float64) float64 {
	v := r.n(1001)
	if v == 1000 {
		return math.NaN()
	}
	return m * float64(v) / 1000
}
