package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/dynosim/dynosim-web/core/report/schema"
	"github.com/dynosim/dynosim-web/kv/tiers"
)

// TierPool is schema.TierPool: the section's shape lives in the schema.
type TierPool = schema.TierPool

// TierStat is schema.TierStat: the section's shape lives in the schema.
type TierStat = schema.TierStat

// LinkStat is schema.LinkStat: the section's shape lives in the schema.
type LinkStat = schema.LinkStat

// TierSeries is schema.TierSeries: the section's shape lives in the schema.
type TierSeries = schema.TierSeries

// TierLine is schema.TierLine: the section's shape lives in the schema.
type TierLine = schema.TierLine

// SeriesLine is schema.SeriesLine: the section's shape lives in the schema.
type SeriesLine = schema.SeriesLine

// Tiers builds the kv_tiers entry of pool from its tiers' snapshot over a
// run of durationMs.
func Tiers(pool string, cfg tiers.Config, n tiers.Snapshot, durationMs float64) TierPool {
	t := TierPool{Pool: pool, BlockBytes: cfg.BlockBytes, OffloadBatchBlocks: cfg.BatchBlocks, Offload: "on_evict", Workers: n.Workers}
	if cfg.WriteThrough {
		t.Offload = "on_store"
	}
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
