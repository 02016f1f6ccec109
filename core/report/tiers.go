package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/dynosim/dynosim-web/kv/tiers"
)

// TierPool is the report's kv_tiers entry of one pool with KVBM lower
// tiers: per tier its blocks, per directional link its traffic and
// utilisation, and both over time.
type TierPool struct {
	Pool               string     `json:"pool"`
	BlockBytes         float64    `json:"block_bytes"`
	OffloadBatchBlocks int        `json:"offload_batch_blocks"`
	Workers            int        `json:"workers"` // engine cores (DP ranks) with a G2 each
	Tiers              []TierStat `json:"tiers"`
	Links              []LinkStat `json:"links"`
	Series             TierSeries `json:"series"`
}

// TierStat is one tier's block counts over the run.
type TierStat struct {
	Tier           string `json:"tier"`            // g2 | g3 | g4
	Scope          string `json:"scope"`           // worker (g2) | shared (g3, g4)
	CapacityBlocks int    `json:"capacity_blocks"` // per worker for g2; 0: unbounded (g4)
	PeakBlocks     int    `json:"peak_blocks"`     // g2: summed over workers
	// HitBlocks are blocks an onboarding found here; OnboardedBlocks left
	// towards G1 (for G3/G4: staged into G2); OffloadedBlocks landed here
	// from the tier above; EvictedBlocks made room.
	HitBlocks       int64   `json:"hit_blocks"`
	OnboardedBlocks int64   `json:"onboarded_blocks"`
	OffloadedBlocks int64   `json:"offloaded_blocks"`
	EvictedBlocks   int64   `json:"evicted_blocks"`
	OnboardedBytes  float64 `json:"onboarded_bytes"`
	OffloadedBytes  float64 `json:"offloaded_bytes"`
}

// LinkStat is one directional link kind (per-worker links summed).
type LinkStat struct {
	Link          string  `json:"link"` // g1_to_g2, g2_to_g1, g2_to_g3, g3_to_g2, g2_to_g4, g4_to_g2
	Scope         string  `json:"scope"`
	Instances     int     `json:"instances"`
	BandwidthGBps float64 `json:"bandwidth_gb_per_second"` // 0: instant
	Transfers     int64   `json:"transfers"`
	Blocks        int64   `json:"blocks"`
	Bytes         float64 `json:"bytes"`
	BusyMs        float64 `json:"busy_ms"`     // summed over instances
	Utilization   float64 `json:"utilization"` // busy_ms / (duration × instances)
}

// TierSeries is tier occupancy and link utilisation per time bucket.
type TierSeries struct {
	BucketMs    float64      `json:"bucket_ms"`
	TMs         []float64    `json:"t_ms"`
	Occupancy   []TierLine   `json:"occupancy"`   // the most blocks held in the bucket
	Utilization []SeriesLine `json:"utilization"` // busy share of the bucket, per link kind
}

// TierLine is one tier's occupancy: blocks, and for bounded tiers the
// fraction of capacity.
type TierLine struct {
	Tier     string    `json:"tier"`
	Blocks   []int     `json:"blocks"`
	Fraction []float64 `json:"fraction,omitempty"`
}

// SeriesLine is one named series.
type SeriesLine struct {
	Name   string    `json:"name"`
	Values []float64 `json:"values"`
}

// Tiers builds the kv_tiers entry of pool from its tiers' snapshot over a
// run of durationMs.
func Tiers(pool string, cfg tiers.Config, n tiers.Snapshot, durationMs float64) TierPool {
	t := TierPool{Pool: pool, BlockBytes: cfg.BlockBytes, OffloadBatchBlocks: cfg.BatchBlocks, Workers: n.Workers}
	caps := [3]int{cfg.G2Blocks, cfg.G3Blocks, 0}
	on := [3]bool{true, cfg.G3Blocks > 0, cfg.G4}
	for i, name := range []string{"g2", "g3", "g4"} {
		if !on[i] {
			continue
		}
		s := n.Tiers[i]
		scope := "shared"
		if i == 0 {
			scope = "worker"
		}
		t.Tiers = append(t.Tiers, TierStat{
			Tier: name, Scope: scope, CapacityBlocks: caps[i], PeakBlocks: n.Peak[i],
			HitBlocks: s.Hits, OnboardedBlocks: s.Onboarded, OffloadedBlocks: s.Offloaded, EvictedBlocks: s.Evicted,
			OnboardedBytes: float64(float64(s.Onboarded) * cfg.BlockBytes), OffloadedBytes: float64(float64(s.Offloaded) * cfg.BlockBytes),
		})
	}
	gbps := [...]float64{cfg.G1ToG2, cfg.G2ToG1, cfg.G2ToG3, cfg.G3ToG2, cfg.G2ToG4, cfg.G4ToG2}
	var kinds []tiers.LinkKind
	for k := tiers.G1ToG2; k <= tiers.G4ToG2; k++ {
		if (k == tiers.G2ToG3 || k == tiers.G3ToG2) && !on[1] || (k == tiers.G2ToG4 || k == tiers.G4ToG2) && !on[2] {
			continue
		}
		kinds = append(kinds, k)
		scope := "shared"
		if k <= tiers.G2ToG1 {
			scope = "worker"
		}
		s := n.Links[k]
		l := LinkStat{Link: k.String(), Scope: scope, Instances: n.Instances[k], BandwidthGBps: gbps[k],
			Transfers: s.Transfers, Blocks: s.Blocks, Bytes: s.Bytes, BusyMs: n.BusyMs[k]}
		if d := durationMs * float64(l.Instances); d > 0 {
			l.Utilization = min(1, l.BusyMs/d)
		}
		t.Links = append(t.Links, l)
	}
	t.Series = tierSeries(n, t.Tiers, kinds, caps, durationMs)
	return t
}

func tierSeries(n tiers.Snapshot, stats []TierStat, kinds []tiers.LinkKind, caps [3]int, durationMs float64) TierSeries {
	w := n.BucketMs
	buckets := len(n.Series)
	if w > 0 && durationMs > 0 {
		buckets = max(buckets, int(math.Ceil(durationMs/w)))
	}
	s := TierSeries{BucketMs: w, TMs: make([]float64, buckets)}
	for i := range s.TMs {
		s.TMs[i] = float64(i) * w
	}
	bucket := func(i int) tiers.Bucket {
		if i < len(n.Series) {
			return n.Series[i]
		}
		return tiers.Bucket{}
	}
	for _, st := range stats {
		k := int(st.Tier[1] - '2') // g2 → 0, g3 → 1, g4 → 2
		line := TierLine{Tier: st.Tier, Blocks: make([]int, buckets)}
		capacity := caps[k]
		if k == 0 {
			capacity *= n.Workers
		}
		if capacity > 0 {
			line.Fraction = make([]float64, buckets)
		}
		for i := range buckets {
			line.Blocks[i] = bucket(i).Used[k]
			if capacity > 0 {
				line.Fraction[i] = float64(line.Blocks[i]) / float64(capacity)
			}
		}
		s.Occupancy = append(s.Occupancy, line)
	}
	for _, k := range kinds {
		line := SeriesLine{Name: k.String(), Values: make([]float64, buckets)}
		if inst := n.Instances[k]; inst > 0 && w > 0 {
			for i := range buckets {
				line.Values[i] = min(1, bucket(i).Busy[k]/(w*float64(inst)))
			}
		}
		s.Utilization = append(s.Utilization, line)
	}
	return s
}

// tableTiers writes the console table's tier lines.
func (r *Report) tableTiers(b *strings.Builder) {
	for _, t := range r.KVTiers {
		parts := make([]string, 0, len(t.Tiers))
		for _, s := range t.Tiers {
			parts = append(parts, fmt.Sprintf("%s %d hit / %d offloaded blocks", s.Tier, s.HitBlocks, s.OffloadedBlocks))
		}
		links := make([]string, 0, len(t.Links))
		for _, l := range t.Links {
			links = append(links, fmt.Sprintf("%s %s%%", l.Link, strconv.FormatFloat(100*l.Utilization, 'f', 1, 64)))
		}
		fmt.Fprintf(b, "KV tiers (%s): %s; link utilisation: %s\n", t.Pool, strings.Join(parts, ", "), strings.Join(links, ", "))
	}
}
