package replay

import (
	"github.com/dynosim/dynosim-web/core/workload"
	"github.com/dynosim/dynosim-web/timing"
)

// request is what the loop keeps of one released request: every feature's
// per-request part sits in this one record, so that dropping a request
// (table.forget) is one slice trim, not several kept in step.
type request struct {
	// turn is its prompt and requested output: the workload's turn
	// offline, a live submission's own copy (its prompt tokens as a value).
	turn *workload.Turn
	// session and index locate the turn in the workload, for the
	// session's next turn (-1: a live submission).
	session, index int32
	arrival        timing.Time
	// first is its first token's time (the planner's TTFT and ITL).
	first timing.Time
	// worker is where its tokens come from: its worker, or disaggregated
	// its decode worker once decoding (-1: none yet). A live abort waits
	// for it.
	worker int32
	over   bool    // it ended
	abort  bool    // live: its client went away
	x      *xstate // disaggregated: its handoff (disagg.go); nil otherwise
}

// table is the loop's request table. Ids are dense from 1 in release
// order; recs[0] is request base+1 (live mode forgets ended requests).
type table struct {
	recs []request
	base uint64
}

// add appends r and returns its id.
func (t *table) add(r request) uint64 {
	t.recs = append(t.recs, r)
	return t.base + uint64(len(t.recs))
}

// at is request id's record; id must be known and not forgotten.
func (t *table) at(id uint64) *request { return &t.recs[id-1-t.base] }

// lookup is request id's record, or nil if it is unknown or forgotten.
func (t *table) lookup(id uint64) *request {
	if id <= t.base || id > t.base+uint64(len(t.recs)) {
		return nil
	}
	return t.at(id)
}

// len is the number of requests the table keeps.
func (t *table) len() int { return len(t.recs) }

// forget drops the oldest requests once they and every older one ended,
// and returns how many it dropped.
func (t *table) forget() int {
	k := 0
	for k < len(t.recs) && t.recs[k].over {
		k++
	}
	if k == 0 {
		return 0
	}
	clear(t.recs[:k]) // their live prompts and handoff states
	t.recs = t.recs[k:]
	t.base += uint64(k)
	return k
}
