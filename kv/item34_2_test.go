package kv

import (
	"fmt"
	"slices"
	"testing"
)

// TestItem34_2DrainedEventsStayPut: the event log carves events, blocks and
// removed hashes from arenas; what a Drain handed out is never written
// again, however many events follow (runs longer than a chunk, chunks
// filling up), and appending to a drained slice does not reach the log.
func TestItem34_2DrainedEventsStayPut(t *testing.T) {
	for _, tc := range []struct {
		name         string
		passes, run  int // passes, blocks per Stored run
		removed, low int // hashes per Removed event; lower-tier events per pass
	}{
		{"small runs", 50, 3, 2, 0},
		{"runs beyond a chunk", 4, blockChunk + 7, hashChunk + 3, 1},
		{"many events per pass", 3, 1, 1, 2 * eventChunk},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := &EventLog{DPRank: 1}
			var kept [][]Event
			var want []string
			h := uint64(0)
			for range tc.passes {
				writePass(log, h+1, tc.run, tc.removed, tc.low)
				h += uint64(tc.run)
				got := log.Drain()
				kept = append(kept, got)
				want = append(want, fmt.Sprintf("%+v", got))
				_ = append(got, Event{ID: 999}) // a reader appending: must not reach the log
				if len(got) > 0 {
					_ = append(got[0].Blocks, StoredBlock{BlockHash: 999})
					_ = append(got[len(got)-1].Removed, 999)
				}
			}
			if log.Drain() != nil {
				t.Fatal("an empty drain is not nil")
			}
			for i := range kept {
				if got := fmt.Sprintf("%+v", kept[i]); got != want[i] {
					t.Fatalf("pass %d's events changed after later passes", i)
				}
				for j := 1; j < len(kept[i]); j++ {
					if kept[i][j].ID != kept[i][j-1].ID+1 {
						t.Fatalf("pass %d: ids %d then %d", i, kept[i][j-1].ID, kept[i][j].ID)
					}
				}
			}
			if first := kept[0][0]; first.Kind != Stored || len(first.Blocks) != tc.run ||
				!slices.Equal(first.Blocks[:1], []StoredBlock{{BlockHash: 1, TokensHash: 1001}}) {
				t.Fatalf("first event %+v", first)
			}
		})
	}
}

// writePass writes one pass's events into log: a Stored run of run blocks
// hashed h, h+1, … (each block's tokens hash 1000 more), removed hashes
// from h on, and low lower-tier stores and removals.
func writePass(log *EventLog, h uint64, run, removed, low int) {
	var ev *Event
	seq := make([]uint64, run)
	for i := range seq {
		seq[i] = h + uint64(i)
		ev = log.stored(ev, seq, i, seq[i]+1000)
	}
	rm := make([]uint64, removed)
	for i := range rm {
		rm[i] = h + uint64(i)
	}
	log.removed(rm)
	for i := range low {
		log.StoredIn(HostPinned, []uint64{h, uint64(i)})
		log.RemovedIn(Disk, []uint64{uint64(i)})
	}
}
