package kv

import (
	"fmt"
	"testing"
)

// TestItem34_2EventBuffers: a Transient log (the in-process replay, whose
// router applies a pass's events before the worker steps again) hands out
// the same events as a log whose reader keeps them (the live hub), and a
// batch stays intact until the next Drain even while the next pass's events
// are written; in steady state it allocates nothing. The log the hub reads
// never writes a drained batch again: a reader keeping every batch finds
// them all as they were handed out.
func TestItem34_2EventBuffers(t *testing.T) {
	for _, tc := range []struct {
		name         string
		passes, run  int // passes, blocks per Stored run
		removed, low int // hashes per Removed event; lower-tier events per pass
	}{
		{"small runs", 60, 3, 2, 0},
		{"runs beyond a chunk", 5, blockChunk + 7, hashChunk + 3, 1},
		{"many events per pass", 4, 1, 1, 2 * eventChunk},
		{"growing passes", 12, 500, 300, 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kept, recycled := &EventLog{DPRank: 2}, &EventLog{DPRank: 2, Transient: true}
			var retained [][]Event
			var want []string
			h := uint64(0)
			pass := func(log *EventLog, h uint64, scale int) {
				writePass(log, h, tc.run*scale, tc.removed*scale, tc.low)
			}
			// scale grows the passes in "growing passes", so the
			// Transient arenas outgrow their chunks mid-replay.
			scale := func(p int) int {
				if tc.name == "growing passes" {
					return 1 + p/3
				}
				return 1
			}
			pass(recycled, h, scale(0))
			for p := range tc.passes {
				pass(kept, h, scale(p))
				got := kept.Drain()
				retained = append(retained, got)
				want = append(want, fmt.Sprintf("%+v", got))

				batch := recycled.Drain()
				if s := fmt.Sprintf("%+v", batch); s != want[p] {
					t.Fatalf("pass %d: the Transient log's events differ from the kept log's", p)
				}
				// The next pass's events are written before the reader
				// is done with this batch (no Drain in between).
				h += uint64(tc.run*scale(p)) + 7
				if p+1 < tc.passes {
					pass(recycled, h, scale(p+1))
				}
				if s := fmt.Sprintf("%+v", batch); s != want[p] {
					t.Fatalf("pass %d: a Transient batch changed before the next Drain", p)
				}
			}
			for i := range retained {
				if got := fmt.Sprintf("%+v", retained[i]); got != want[i] {
					t.Fatalf("pass %d's retained events were overwritten by later passes", i)
				}
			}
		})
	}
	t.Run("steady state allocates nothing", func(t *testing.T) {
		log := &EventLog{Transient: true}
		seq := make([]uint64, 300)
		rm := make([]uint64, 200)
		one := func() {
			var ev *Event
			for i := range seq {
				ev = log.stored(ev, seq, i, 1)
			}
			log.removed(rm)
			log.RemovedIn(Disk, rm[:5])
			_ = log.Drain()
		}
		one()
		one()
		if n := testing.AllocsPerRun(20, one); n != 0 {
			t.Fatalf("%v allocations a pass", n)
		}
	})
}
