package tiers

import (
	"math"
	"slices"
	"testing"
)

// O1–O6 of spec §10.6: the processor-sharing closed forms of §5.2
// (1 GB/s = 10^6 bytes/ms).
func TestLinkClosedForms(t *testing.T) {
	const mb = 1e6
	type start struct{ at, bytes float64 }
	type want struct {
		at  float64
		ids []uint64 // completing by then, in order
	}
	tests := []struct {
		name   string
		gbps   float64
		starts []start
		checks []want
	}{
		{"O1 one 1 MB transfer", 1, []start{{0, mb}}, []want{{0.99, nil}, {1.0, []uint64{1}}}},
		{"O2 two 1 MB transfers at once", 1, []start{{0, mb}, {0, mb}}, []want{{1.99, nil}, {2.0, []uint64{1, 2}}}},
		{"O3 a second transfer joins at 0.5", 1, []start{{0, mb}, {0.5, mb}}, []want{{1.49, nil}, {1.5, []uint64{1}}, {1.99, nil}, {2.0, []uint64{2}}}},
		{"O4 an idle gap", 1, []start{{0, mb}, {5, mb}}, []want{{1.0, []uint64{1}}, {5.99, nil}, {6.0, []uint64{2}}}},
		{"O5 infinite bandwidth", 0, []start{{10, 1e9}}, []want{{10, []uint64{1}}}},
		{"O6 ten at once", 1, func() []start {
			s := make([]start, 10)
			for i := range s {
				s[i] = start{0, mb}
			}
			return s
		}(), []want{{9.99, nil}, {10.0, []uint64{1, 10, 9, 8, 7, 6, 5, 4, 3, 2}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := NewLink(tc.gbps)
			var id uint64
			si := 0
			for _, c := range tc.checks {
				var got []uint64
				var at []float64
				// Start every transfer due by the check's time, in time
				// order, advancing the link first as callers do.
				for si < len(tc.starts) && tc.starts[si].at <= c.at {
					for _, d := range l.AdvanceTo(tc.starts[si].at) {
						got, at = append(got, d.ID), append(at, d.At)
					}
					id++
					l.Start(tc.starts[si].at, id, tc.starts[si].bytes, 0)
					si++
				}
				for _, d := range l.AdvanceTo(c.at) {
					got, at = append(got, d.ID), append(at, d.At)
				}
				if !slices.Equal(got, c.ids) {
					t.Fatalf("by %v: completed %v, want %v", c.at, got, c.ids)
				}
				for _, a := range at {
					if math.Abs(a-c.at) > 1e-9 {
						t.Errorf("by %v: a transfer completed at %v", c.at, a)
					}
				}
			}
		})
	}
}

// The deadline is the exact PS completion time with no further arrivals:
// last + Σ_j min(r_j, r)/B; earliest is the smallest remaining's.
func TestLinkDeadline(t *testing.T) {
	l := NewLink(1) // 10^6 bytes per ms
	l.Start(0, 1, 1e6, 0)
	l.Start(0, 2, 3e6, 0)
	l.Start(0, 3, 2e6, 0)
	for id, want := range map[uint64]float64{1: 3, 2: 6, 3: 5} {
		if at, ok := l.Deadline(id); !ok || math.Abs(at-want) > 1e-9 {
			t.Errorf("deadline of %d = %v, %v; want %v", id, at, ok, want)
		}
	}
	if at, ok := l.Earliest(); !ok || math.Abs(at-3) > 1e-9 {
		t.Errorf("earliest = %v, %v; want 3", at, ok)
	}
	// The general rule: k active, r_min finishes after k·r_min/B, the
	// rest go on at B/(k−1).
	got := l.AdvanceTo(100)
	want := []Done{{ID: 1, At: 3}, {ID: 3, At: 5}, {ID: 2, At: 6}}
	if len(got) != len(want) {
		t.Fatalf("completed %v, want %v", got, want)
	}
	for i := range got {
		if got[i].ID != want[i].ID || math.Abs(got[i].At-want[i].At) > 1e-9 {
			t.Errorf("completion %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if _, ok := l.Deadline(1); ok {
		t.Error("a completed transfer has a deadline")
	}
	if math.Abs(l.BusyMs()-6) > 1e-9 {
		t.Errorf("busy %v ms, want 6", l.BusyMs())
	}
}

// Directions keep separate state: a transfer on one link does not slow
// one on another, and a rewound clock is a no-op.
func TestLinkSeparateAndRewind(t *testing.T) {
	up, down := NewLink(1), NewLink(1)
	up.Start(0, 1, 1e6, 0)
	down.Start(0, 2, 1e6, 0)
	if d := up.AdvanceTo(1); len(d) != 1 || d[0].ID != 1 {
		t.Fatalf("up completed %v", d)
	}
	if d := down.AdvanceTo(0.5); len(d) != 0 {
		t.Fatalf("down completed %v at 0.5", d)
	}
	if d := down.AdvanceTo(0.25); len(d) != 0 { // rewind: nothing happens
		t.Fatalf("rewound link completed %v", d)
	}
	if d := down.AdvanceTo(1); len(d) != 1 || math.Abs(d[0].At-1) > 1e-9 {
		t.Fatalf("down completed %v, want id 2 at 1", d)
	}
}
