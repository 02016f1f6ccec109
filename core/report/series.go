package report

import (
	"math"
	"slices"

	"github.com/dynosim/dynosim-web/core/report/schema"
	"github.com/dynosim/dynosim-web/timing"
)

// Series is a bucketed time series for plots. Buckets start 100 ms wide and
// double (merging pairs) whenever the run outgrows maxBuckets, so its size
// is bounded whatever the trace length.
type Series struct {
	width   timing.Time
	buckets []bucket
	workers int
	// The last bucket at found, [lo, hi): most facts fall in it (a token
	// per output token, a sample per pass), so they skip the division.
	lo, hi timing.Time
	last   int
}

const maxBuckets = 256

type bucket struct {
	tokens, completed  int64
	admitInput, reused int64
	running, waiting   []float64 // per worker sums of pass-start samples
	kv                 []float64
	samples            []int32
}

func newSeries(workers int) *Series {
	return &Series{width: timing.FromMs(100), workers: workers}
}

func (s *Series) at(t timing.Time) *bucket {
	if t >= s.lo && t < s.hi {
		return &s.buckets[s.last]
	}
	for t >= s.width*maxBuckets {
		s.coarsen()
	}
	i := int(t / s.width)
	if t >= 0 {
		s.lo, s.hi, s.last = timing.Time(i)*s.width, timing.Time(i+1)*s.width, i
	}
	for len(s.buckets) <= i {
		s.buckets = append(s.buckets, bucket{
			running: make([]float64, s.workers), waiting: make([]float64, s.workers),
			kv: make([]float64, s.workers), samples: make([]int32, s.workers),
		})
	}
	return &s.buckets[i]
}

func (s *Series) coarsen() {
	n := (len(s.buckets) + 1) / 2
	for i := range n {
		a := s.buckets[2*i]
		if 2*i+1 < len(s.buckets) {
			b := s.buckets[2*i+1]
			a.tokens += b.tokens
			a.completed += b.completed
			a.admitInput += b.admitInput
			a.reused += b.reused
			for w := range a.running {
				a.running[w] += b.running[w]
				a.waiting[w] += b.waiting[w]
				a.kv[w] += b.kv[w]
				a.samples[w] += b.samples[w]
			}
		}
		s.buckets[i] = a
	}
	s.buckets = s.buckets[:n]
	s.width *= 2
	s.lo, s.hi = 0, 0
}

func (s *Series) token(t timing.Time)    { s.at(t).tokens++ }
func (s *Series) complete(t timing.Time) { s.at(t).completed++ }

func (s *Series) admit(t timing.Time, input int32, reused int) {
	b := s.at(t)
	b.admitInput += int64(input)
	b.reused += int64(reused)
}

// Sample records a worker's load at the start of a pass, right after its
// scheduling decisions (so admissions of that pass count as running).
func (s *Series) Sample(worker int, t timing.Time, running, waiting int, kvUsage float64) {
	b := s.at(t)
	b.running[worker] += float64(running)
	b.waiting[worker] += float64(waiting)
	b.kv[worker] += kvUsage
	b.samples[worker]++
}

// TimeSeries is schema.TimeSeries: the section's shape lives in the schema.
type TimeSeries = schema.TimeSeries

// WorkerSeries is schema.WorkerSeries: the section's shape lives in the schema.
type WorkerSeries = schema.WorkerSeries

func (s *Series) render() TimeSeries {
	ts := TimeSeries{BucketMs: s.width.Ms(), Workers: make([]WorkerSeries, s.workers)}
	sec := s.width.Ms() / 1000
	for i, b := range s.buckets {
		ts.TMs = append(ts.TMs, float64(i)*s.width.Ms())
		ts.OutputTokensPerS = append(ts.OutputTokensPerS, float64(b.tokens)/sec)
		ts.CompletedPerS = append(ts.CompletedPerS, float64(b.completed)/sec)
		ratio := 0.0
		if b.admitInput > 0 {
			ratio = float64(b.reused) / float64(b.admitInput)
		}
		ts.PrefixReuseRatio = append(ts.PrefixReuseRatio, ratio)
		for w := range ts.Workers {
			ws := &ts.Workers[w]
			n := float64(max(b.samples[w], 1))
			ws.Running = append(ws.Running, b.running[w]/n)
			ws.Waiting = append(ws.Waiting, b.waiting[w]/n)
			ws.KVUsage = append(ws.KVUsage, b.kv[w]/n)
		}
	}
	return ts
}

// windowQuantiles returns the p50 and p99 (the nearest-rank rule of
// sortedQuantiles) of xs grouped by window: win[i] is xs[i]'s window, of
// n. A window without a sample gets null. xs is left in its order.
func windowQuantiles(n int, win []int32, xs []float64) (p50, p99 []*float64) {
	p50, p99 = make([]*float64, n), make([]*float64, n)
	if n == 0 {
		return p50, p99 // no window: no token was emitted, so no sample
	}
	by := make([][]float64, n)
	for i, w := range win {
		w := min(int(w), n-1) // a sample past the last window joins it
		by[w] = append(by[w], xs[i])
	}
	for w, v := range by {
		if len(v) == 0 {
			continue
		}
		slices.Sort(v)
		a, b := v[int(math.Round(float64(len(v)-1)*0.5))], v[int(math.Round(float64(len(v)-1)*0.99))]
		p50[w], p99[w] = &a, &b
	}
	return p50, p99
}

// Horizon is the first time whose sample would coarsen the series: facts
// before it fall in buckets that are final (the replay's stepping ahead
// stays below it, so that its float sums group as pass by pass).
func (s *Series) Horizon() timing.Time { return s.width * maxBuckets }
