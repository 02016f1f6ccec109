package main

import (
	"math"
	"strconv"
	"strings"

	"github.com/dynosim/dynosim-web/core/report/metrics"
	"github.com/dynosim/dynosim-web/core/report/schema"
)

// This file: the KV tiers section of a run whose pools have KVBM lower
// tiers (report.kv_tiers): per pool a table of the tiers and the links
// between them, and a summary line. public/tiers.js draws the occupancy
// and utilisation plots straight from the report's series. Pure Go,
// tested natively.

// TiersView is the KV tiers section of the shown run.
type TiersView struct {
	Pools []TierPoolView
}

// TierPoolView is one pool's table and summary line.
type TierPoolView struct {
	Pool      string
	Title     string // "" for a run's only pool, else "Prefill pool"
	Summary   string
	TierHeads []TierHead // the tier rows' columns, the row header first
	LinkHeads []TierHead // the link rows' columns, the row header first
	Tiers     []TierRow
	Links     []TierRow
}

// TierHead is a column header with the id its cells name in headers.
type TierHead struct {
	ID, Text string
}

// TierRow is a tier or a link: its name (g2, g1_to_g2), its row header and
// its cells, in the order of its heads.
type TierRow struct {
	Name, Label, ID string
	Cells           []TierCell
}

// TierCell is one value: its column (for data-label), the report key it
// shows (data-key), the report's value (data-value) and its text.
type TierCell struct {
	Col, Key, Raw, Text, Headers string
}

var (
	tierCols = [...]string{"Tier", "Scope", "Capacity (blocks)", "Peak (blocks)", "Hits (blocks)", "Onboarded (blocks)", "Offloaded (blocks)", "Evicted (blocks)"}
	linkCols = [...]string{"Link", "Instances", "Bandwidth", "Transfers", "Blocks", "Bytes", "Busy", "Utilisation"}
	// tierNames say what each tier is.
	tierNames = map[string]string{"g2": "host", "g3": "disk", "g4": "object"}
)

// tiersView derives the section from the report's kv_tiers (nil or empty:
// no section).
func tiersView(pools []schema.TierPool) *TiersView {
	if len(pools) == 0 {
		return nil
	}
	v := &TiersView{}
	for i, p := range pools {
		pv := TierPoolView{Pool: p.Pool, Summary: tierSummary(p)}
		if len(pools) > 1 {
			pv.Title = tierPoolTitle(p.Pool)
		}
		id := "kvt-" + strconv.Itoa(i) + "-"
		pv.TierHeads = tierHeads(id+"t", tierCols[:])
		pv.LinkHeads = tierHeads(id+"l", linkCols[:])
		for _, t := range p.Tiers {
			capacity := "unbounded"
			if t.CapacityBlocks > 0 {
				capacity = metrics.Format(float64(t.CapacityBlocks))
				if t.Scope == "worker" {
					capacity += " per worker"
				}
			}
			pv.Tiers = append(pv.Tiers, tierRow(id+t.Tier, t.Tier, tierLabel(t.Tier), pv.TierHeads, []TierCell{
				{Key: "scope", Raw: t.Scope, Text: scopeText(t.Scope)},
				{Key: "capacity_blocks", Raw: strconv.Itoa(t.CapacityBlocks), Text: capacity},
				tierCount("peak_blocks", float64(t.PeakBlocks)),
				tierCount("hit_blocks", float64(t.HitBlocks)),
				tierCount("onboarded_blocks", float64(t.OnboardedBlocks)),
				tierCount("offloaded_blocks", float64(t.OffloadedBlocks)),
				tierCount("evicted_blocks", float64(t.EvictedBlocks)),
			}))
		}
		for _, l := range p.Links {
			bw := "instant"
			if l.BandwidthGBps > 0 {
				bw = metrics.Format(l.BandwidthGBps) + " GB/s"
			}
			pv.Links = append(pv.Links, tierRow(id+l.Link, l.Link, l.Link, pv.LinkHeads, []TierCell{
				{Key: "instances", Raw: strconv.Itoa(l.Instances), Text: strconv.Itoa(l.Instances) + " (" + scopeText(l.Scope) + ")"},
				{Key: "bandwidth_gb_per_second", Raw: tierRaw(l.BandwidthGBps), Text: bw},
				tierCount("transfers", float64(l.Transfers)),
				tierCount("blocks", float64(l.Blocks)),
				{Key: "bytes", Raw: tierRaw(l.Bytes), Text: decimalBytes(l.Bytes)},
				{Key: "busy_ms", Raw: tierRaw(l.BusyMs), Text: fmtMs(l.BusyMs)},
				{Key: "utilization", Raw: tierRaw(l.Utilization), Text: pct(100 * l.Utilization)},
			}))
		}
		v.Pools = append(v.Pools, pv)
	}
	return v
}

func tierHeads(prefix string, cols []string) []TierHead {
	hs := make([]TierHead, len(cols))
	for i, c := range cols {
		hs[i] = TierHead{ID: prefix + strconv.Itoa(i), Text: c}
	}
	return hs
}

// tierRow names each cell's column and headers (its row header, its column's).
func tierRow(id, name, label string, hs []TierHead, cells []TierCell) TierRow {
	for i := range cells {
		cells[i].Col = hs[i+1].Text
		cells[i].Headers = id + " " + hs[i+1].ID
	}
	return TierRow{Name: name, Label: label, ID: id, Cells: cells}
}

func tierCount(key string, v float64) TierCell {
	return TierCell{Key: key, Raw: tierRaw(v), Text: metrics.Format(v)}
}

func tierRaw(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// tierLabel is "g2 (host)".
func tierLabel(t string) string {
	if n, ok := tierNames[t]; ok {
		return t + " (" + n + ")"
	}
	return t
}

func scopeText(s string) string {
	if s == "worker" {
		return "per worker"
	}
	return s
}

// linkName is g1_to_g2 as "G1→G2".
func linkName(l string) string { return strings.ReplaceAll(strings.ToUpper(l), "_TO_", "→") }

// tierPoolTitle is "Prefill pool".
func tierPoolTitle(p string) string {
	if p == "" {
		return "Pool"
	}
	return strings.ToUpper(p[:1]) + p[1:] + " pool"
}

// tierSummary is the line above a pool's table: "G2 served 96 blocks of
// prefix, G3 4,194; the G1→G2 links were busy 1.3 % of the run on average
// (the busiest, G2→G3, 5.1 %)."
func tierSummary(p schema.TierPool) string {
	var b strings.Builder
	for i, t := range p.Tiers {
		if i == 0 {
			b.WriteString(strings.ToUpper(t.Tier) + " served " + metrics.Format(float64(t.HitBlocks)) + " block" + plural(int(min(t.HitBlocks, 2))) + " of prefix")
			continue
		}
		b.WriteString(", " + strings.ToUpper(t.Tier) + " " + metrics.Format(float64(t.HitBlocks)))
	}
	var first, busiest *schema.LinkStat
	for i := range p.Links {
		l := &p.Links[i]
		if first == nil {
			first = l
		}
		if busiest == nil || l.Utilization > busiest.Utilization {
			busiest = l
		}
	}
	if first != nil {
		if b.Len() > 0 {
			b.WriteString("; ")
		}
		if first.Instances > 1 {
			b.WriteString("the " + linkName(first.Link) + " links were busy " + pct(100*first.Utilization) + " of the run on average")
		} else {
			b.WriteString("the " + linkName(first.Link) + " link was busy " + pct(100*first.Utilization) + " of the run")
		}
		if busiest != first && busiest.Utilization > first.Utilization && !math.IsNaN(busiest.Utilization) {
			b.WriteString(" (the busiest, " + linkName(busiest.Link) + ", " + pct(100*busiest.Utilization) + ")")
		}
	}
	if b.Len() == 0 {
		return ""
	}
	return b.String() + "."
}
