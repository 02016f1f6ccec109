package main

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/dynosim/dynosim-web/core/report/metrics"
	"github.com/dynosim/dynosim-web/core/report/schema"
)

// This file: the TTFT breakdown (report.ttft_breakdown and a request's
// ttft_breakdown_ms) turned into stacked bars and their legend table. Pure
// Go, tested natively.

// partInfo is the description of a part (metrics.TTFTParts, the report's
// order) and its place in that order; an unknown part (a newer core) gets
// its key as label and comes last.
func partInfo(part string) (metrics.Part, int) {
	for i, p := range metrics.TTFTParts {
		if p.Key == part {
			return p, i
		}
	}
	return metrics.Part{Key: part, Label: part, Help: "TTFT part " + part + " of the report."}, len(metrics.TTFTParts)
}

// Glossary is the help section's terms (the TTFT parts included).
var Glossary = metrics.Glossary

// BarSegment is one part of a stacked bar.
type BarSegment struct {
	Part, Label, Help string
	Ms                float64 // the part's time
	Pct               float64 // its share of the bar, 0–100
}

// Width is the segment's CSS width.
func (s BarSegment) Width() string { return fmt.Sprintf("width:%.3f%%", s.Pct) }

// Text is the segment's hover text.
func (s BarSegment) Text() string { return s.Label + ": " + fmtMs(s.Ms) + " (" + pct(s.Pct) + ")" }

// BreakdownBar is one stacked bar: the aggregate mean or one request.
type BreakdownBar struct {
	Title   string
	TotalMs float64
	Segs    []BarSegment // in metrics.TTFTParts order; zero parts included (Pct 0)
}

// Total is the bar's total as text.
func (b *BreakdownBar) Total() string { return fmtMs(b.TotalMs) }

// Aria describes the bar for screen readers (the bar itself is colour).
func (b *BreakdownBar) Aria() string {
	s := b.Title + ": " + fmtMs(b.TotalMs) + " in all"
	for _, g := range b.Segs {
		if g.Ms > 0 {
			s += "; " + g.Label + " " + fmtMs(g.Ms) + " (" + pct(g.Pct) + ")"
		}
	}
	return s
}

// Shown are the segments wide enough to draw.
func (b *BreakdownBar) Shown() []BarSegment {
	var out []BarSegment
	for _, g := range b.Segs {
		if g.Pct > 0 {
			out = append(out, g)
		}
	}
	return out
}

// newBar builds a bar from (part, ms) pairs in the core's order, sorted
// into metrics.TTFTParts order (unknown parts last). The shares are of the parts'
// sum, which is the total: the parts add up to the TTFT.
func newBar(title string, parts []schema.BreakdownPart) *BreakdownBar {
	b := &BreakdownBar{Title: title}
	idx := map[string]int{}
	for _, p := range parts {
		info, _ := partInfo(p.Part)
		v := p.MeanMs
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			v = 0
		}
		idx[p.Part] = len(b.Segs)
		b.Segs = append(b.Segs, BarSegment{Part: p.Part, Label: info.Label, Help: info.Help, Ms: v})
		b.TotalMs += v
	}
	slices.SortStableFunc(b.Segs, func(x, y BarSegment) int {
		_, i := partInfo(x.Part)
		_, j := partInfo(y.Part)
		return i - j
	})
	if b.TotalMs > 0 {
		for i := range b.Segs {
			b.Segs[i].Pct = b.Segs[i].Ms / b.TotalMs * 100
		}
	}
	return b
}

// aggregateBar is the bar of the report's mean TTFT by part (nil without a
// breakdown).
func aggregateBar(bd *schema.BreakdownSection) *BreakdownBar {
	if bd == nil || len(bd.Parts) == 0 {
		return nil
	}
	b := newBar(fmt.Sprintf("Mean of %s requests", metrics.Format(float64(bd.Requests))), bd.Parts)
	if bd.MeanTTFTMs > 0 {
		b.TotalMs = bd.MeanTTFTMs // the report's own mean (the parts' sum up to rounding)
	}
	return b
}

// requestBar is the bar of one request's ttft_breakdown_ms (nil when it has
// none: no first token).
func requestBar(uuid uint64, parts map[string]float64) *BreakdownBar {
	if parts == nil {
		return nil
	}
	list := make([]schema.BreakdownPart, 0, len(parts))
	for k, v := range parts {
		list = append(list, schema.BreakdownPart{Part: k, MeanMs: v})
	}
	slices.SortFunc(list, func(a, b schema.BreakdownPart) int { // a stable order for unknown parts
		if a.Part < b.Part {
			return -1
		}
		if a.Part > b.Part {
			return 1
		}
		return 0
	})
	return newBar(fmt.Sprintf("Request %d", uuid), list)
}

// LegendRow is one part in the breakdown's legend table.
type LegendRow struct {
	Part, Label, Help, TipID string
	Mean, Share, P50, P99    string
	MeanMs                   float64
	Request                  string // the selected request's time, "" without one
	RequestMs                float64
}

// legendRows lists every part of the aggregate (and of the selected
// request) with its mean, share, p50, p99 and the request's time.
func legendRows(bd *schema.BreakdownSection, agg, req *BreakdownBar) []LegendRow {
	if agg == nil {
		return nil
	}
	stats := map[string]schema.BreakdownPart{}
	for _, p := range bd.Parts {
		stats[p.Part] = p
	}
	rows := make([]LegendRow, 0, len(agg.Segs))
	seen := map[string]bool{}
	add := func(g BarSegment, inAgg bool) {
		seen[g.Part] = true
		r := LegendRow{Part: g.Part, Label: g.Label, Help: g.Help, TipID: "tip-ttft-" + g.Part, Mean: "—", Share: "—", P50: "—", P99: "—"}
		if inAgg {
			st := stats[g.Part]
			r.MeanMs, r.Mean, r.Share, r.P50, r.P99 = g.Ms, fmtMs(g.Ms), pct(g.Pct), fmtMs(st.P50Ms), fmtMs(st.P99Ms)
		}
		if req != nil {
			r.Request = "—"
			for _, s := range req.Segs {
				if s.Part == g.Part {
					r.RequestMs, r.Request = s.Ms, fmtMs(s.Ms)
				}
			}
		}
		rows = append(rows, r)
	}
	for _, g := range agg.Segs {
		add(g, true)
	}
	if req != nil {
		for _, g := range req.Segs {
			if !seen[g.Part] {
				add(g, false)
			}
		}
	}
	return rows
}

// fmtMs prints milliseconds with a precision that suits the size:
// "0.42 ms", "184.3 ms", "4,456 ms (4.5 s)".
func fmtMs(v float64) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "—"
	case math.Abs(v) < 10:
		return strconv.FormatFloat(v, 'f', 2, 64) + " ms"
	case math.Abs(v) < 1000:
		return strconv.FormatFloat(v, 'f', 1, 64) + " ms"
	}
	return metrics.Format(math.Round(v)) + " ms (" + metrics.Duration(v) + ")"
}

// pct prints a share in percent, 0–100.
func pct(p float64) string {
	if p > 0 && p < 0.1 {
		return "<0.1 %"
	}
	return strconv.FormatFloat(p, 'f', 1, 64) + " %"
}
