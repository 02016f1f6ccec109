package router

import (
	"testing"

	"github.com/dynosim/dynosim-web/timing"
)

// Issue 30 item 8: the KV router's queue orders held requests by the
// trace's strict_priority and priority as Dynamo's policy_queue.rs does
// (spec §10.11): strict priority first, then the policy score with
// max(priority, 0) seconds of jump, larger first; the earliest enqueued
// among equals. A negative priority is no jump; no priority leaves the
// plain orders.
func TestItem30_8RouterQueuePriority(t *testing.T) {
	type held struct {
		arrivalS float64
		priority int32
		strict   uint32
		isl      int
	}
	for _, tc := range []struct {
		name, policy string
		held         []held
		want         int // index Next picks
	}{
		{"fcfs no priority", "fcfs", []held{{0, 0, 0, 8}, {1, 0, 0, 8}}, 0},
		{"fcfs jump past arrival", "fcfs", []held{{0, 0, 0, 8}, {1, 0, 0, 8}, {2, 5, 0, 8}}, 2},
		{"fcfs jump short of arrival", "fcfs", []held{{0, 0, 0, 8}, {1, 0, 0, 8}, {2, 1, 0, 8}}, 0},
		{"fcfs negative is no jump", "fcfs", []held{{0, 0, 0, 8}, {0, -5, 0, 8}}, 0},
		{"fcfs equal keys keep enqueue order", "fcfs", []held{{0, 3, 0, 8}, {0, 3, 0, 8}}, 0},
		{"strict before score", "fcfs", []held{{0, 100, 0, 8}, {5, 0, 1, 8}}, 1},
		{"lcfs jump", "lcfs", []held{{0, 3, 0, 8}, {2, 0, 0, 8}}, 0},
		{"wspt jump", "wspt", []held{{0, 0, 0, 100}, {0, 1, 0, 100}}, 1},
		{"wspt shorter wins", "wspt", []held{{0, 1, 0, 100}, {0, 0, 0, 10}}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewKV(KVConfig{BlockSize: 4, QueuePolicy: tc.policy})
			if err != nil {
				t.Fatal(err)
			}
			var ids []uint64
			for i, h := range tc.held {
				id := uint64(i + 1)
				r.hold(&Request{ID: id, Arrival: timing.FromMs(h.arrivalS * 1000), Priority: h.priority, StrictPriority: h.strict}, queuedSeq{isl: h.isl})
				ids = append(ids, id)
			}
			if got := r.Next(ids); got != tc.want {
				t.Errorf("Next = %d, want %d", got, tc.want)
			}
			for _, id := range ids {
				r.unhold(id)
			}
			if r.ranked != 0 || len(r.queued) != 0 {
				t.Errorf("after unhold: ranked %d, queued %d", r.ranked, len(r.queued))
			}
		})
	}
}
