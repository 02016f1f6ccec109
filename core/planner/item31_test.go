package planner

import (
	"testing"
)

// Issue 31 item 1: no scale-down within the cool-down after an add, and
// the tick says so; after it, scale-down proceeds.
func TestItem31_1Cooldown(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cooldownS float64
		wantDown  float64 // the first tick (ms) that gives a worker back
	}{
		{"default 120 s", 0, 5000 + 120_000},
		{"30 s", 30, 35_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := loadConfig()
			c.ScaleDownCooldownS = tc.cooldownS
			p := mustNew(t, c, prefillPool())
			n, down := 3, -1.0
			for i := range 40 {
				now := float64(5000 * (i + 1))
				queued := 0
				if i == 0 {
					queued = 40_000 // over the SLA: +1 at t = 5 s
				}
				d := p.Tick(loadSnap(now, n, 0, queued, 8, 0))
				if i == 0 && (d.Targets[0] != 4 || d.Action != ActionUp) {
					t.Fatalf("first tick: target %d, action %q, want 4, %q", d.Targets[0], d.Action, ActionUp)
				}
				if d.Targets[0] < n && down < 0 {
					down = now
					if d.Action != ActionDown {
						t.Errorf("action %q, want %q", d.Action, ActionDown)
					}
				}
				if i == 1 && d.Action != ActionHold {
					t.Errorf("second tick: action %q, want hold (%s)", d.Action, d.Reason)
				}
				n = d.Targets[0]
			}
			if down != tc.wantDown {
				t.Errorf("first scale-down at %v ms, want %v", down, tc.wantDown)
			}
		})
	}
}
