package tiers

// Stats are a System's counters since it was built.
type Stats struct {
	Tiers [3]TierStats // G2 (over every worker), G3, G4
	Links [nLinks]LinkStats
}

// TierStats counts one tier's blocks.
type TierStats struct {
	Hits      int64 // blocks an onboarding found here
	Onboarded int64 // blocks copied out towards G1 (G2→G1; G3/G4→G2 for staging)
	Offloaded int64 // blocks that landed here from the tier above
	Evicted   int64 // blocks evicted to make room
}

// LinkStats counts one link kind (summed over the workers for per-worker
// links).
type LinkStats struct {
	Transfers, Blocks int64
	Bytes             float64
}

// Snapshot is what a System reports.
type Snapshot struct {
	Stats
	Workers   int    // workers that joined
	Peak      [3]int // most blocks held at once (G2 over every worker)
	BusyMs    [nLinks]float64
	Instances [nLinks]int // links of each kind (per-worker links: one per worker)
	Series    []Bucket
	BucketMs  float64
}

// Bucket is one time bucket of the series: each tier's most used blocks
// and each link kind's busy time within it.
type Bucket struct {
	Used [3]int
	Busy [nLinks]float64 // ms, summed over the kind's links
}

// Snapshot returns the counters, peaks and series so far.
func (s *System) Snapshot() Snapshot {
	n := Snapshot{Stats: s.stats, Workers: len(s.workers), Series: s.series.buckets, BucketMs: s.series.width}
	n.Peak[0] = s.series.peakG2
	if s.g3 != nil {
		n.Peak[1] = s.g3.peak
	}
	if s.g4 != nil {
		n.Peak[2] = s.g4.peak
	}
	for i, l := range s.links {
		n.BusyMs[s.kinds[i]] += l.busy
		n.Instances[s.kinds[i]]++
	}
	return n
}

// series buckets tier occupancy and link busy time for plots: buckets
// start 100 ms wide and double (merging pairs) past maxBuckets, as the
// report's series do.
type series struct {
	width   float64
	buckets []Bucket
	peakG2  int
}

const maxBuckets = 256

func newSeries() series { return series{width: 100} }

func (s *series) at(t float64) *Bucket {
	for t >= s.width*maxBuckets {
		s.coarsen()
	}
	i := int(t / s.width)
	for len(s.buckets) <= i {
		s.buckets = append(s.buckets, Bucket{})
	}
	return &s.buckets[i]
}

func (s *series) coarsen() {
	n := (len(s.buckets) + 1) / 2
	for i := range n {
		a := s.buckets[2*i]
		if 2*i+1 < len(s.buckets) {
			b := s.buckets[2*i+1]
			for k := range a.Used {
				a.Used[k] = max(a.Used[k], b.Used[k])
			}
			for k := range a.Busy {
				a.Busy[k] += b.Busy[k]
			}
		}
		s.buckets[i] = a
	}
	s.buckets = s.buckets[:n]
	s.width *= 2
}

// busy adds a link's busy interval [from, to), split over buckets.
func (s *series) busy(k LinkKind, from, to float64) {
	for from < to {
		b := s.at(from)
		end := min(to, float64(int(from/s.width)+1)*s.width)
		if end <= from { // rounding at a bucket edge
			end = to
		}
		b.Busy[k] += end - from
		from = end
	}
}

// note records the tiers' occupancy at t.
func (s *System) note(t float64) {
	b := s.series.at(t)
	b.Used[0] = max(b.Used[0], s.g2Used)
	s.series.peakG2 = max(s.series.peakG2, s.g2Used)
	if s.g3 != nil {
		b.Used[1] = max(b.Used[1], s.g3.used)
	}
	if s.g4 != nil {
		b.Used[2] = max(b.Used[2], s.g4.used)
	}
}
