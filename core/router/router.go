// Package router places requests on workers. A Policy sees a read-only View
// of one worker pool, chooses a worker and a data-parallel rank (or holds the
// request until capacity frees), observes the KV events workers publish at
// their pass ends, and hears of workers joining and leaving. Policies are
// deterministic: any randomness comes from a stream seeded by the config.
package router

import (
	"math/rand/v2"

	"github.com/dynosim/dynosim-web/kv"
	"github.com/dynosim/dynosim-web/timing"
)

// Request is what a policy knows of a request when it places it.
type Request struct {
	ID      uint64
	Arrival timing.Time
	Now     timing.Time // the placement time (later than Arrival if it was held)
	Prompt  []uint32    // prompt tokens; valid during Place only
	Output  int         // requested output tokens
	// RunLen, if > 0, promises that Prompt's tokens are equal within each
	// aligned run [k·RunLen, (k+1)·RunLen) (workload.RunLen: trace
	// prompts): the KV router hashes a block inside one run as one token
	// repeated without comparing its tokens (issue 34 item 2).
	RunLen int
	// Priority and StrictPriority are the trace's priority and
	// strict_priority (Dynamo's request metadata, spec §1.1): the KV
	// router's queue orders held requests by them (kv.go Next).
	Priority       int32
	StrictPriority uint32
}

// Load is a worker's state as the router may see it.
type Load struct {
	Running, Waiting int // requests, summed over ranks
	ActiveBlocks     int
	TotalBlocks      int
}

// View is a read-only view of the workers of one pool, indexed 0..Workers()-1.
// Indices are stable for a run: a worker the planner adds gets the next
// one, and one that is starting, draining or removed keeps its index but
// is not Routable.
type View interface {
	Workers() int
	Ranks(worker int) int
	Load(worker int) Load
	Routable(worker int) bool
}

// Placement names a worker and one of its data-parallel ranks.
type Placement struct {
	Worker, Rank int
	// Overlap is the prompt tokens the policy expects to be cached there,
	// or -1 if it does not estimate (round robin, random).
	Overlap int
}

// Policy is a placement policy.
type Policy interface {
	// Place chooses where r runs. ok false holds r in the driver's queue,
	// in arrival order, until a pass ends or a worker joins; then it is
	// offered again.
	Place(r *Request, v View) (p Placement, ok bool)
	// Observe receives the KV events a worker published in a pass, when
	// the pass ends: a decision made at an earlier or the same time never
	// sees blocks stored by a pass still running.
	Observe(worker int, events []kv.Event)
	// Next picks which held request (an index into held, the ids in
	// arrival order) is offered next when capacity may have freed: the
	// router queue's order.
	Next(held []uint64) int
	// PrefillDone tells that request id emitted its first token (its
	// prompt is computed) at now.
	PrefillDone(id uint64, now timing.Time)
	// Finished tells that request id reached a terminal state at now.
	Finished(id uint64, now timing.Time)
	// Added and Removed tell that a worker joined (ready to serve) or left
	// the pool. The driver adds every initial worker before the first
	// request.
	Added(worker int)
	Removed(worker int)
}

// RoundRobin cycles over workers; each worker cycles over its ranks
// independently (spec §8.6).
type RoundRobin struct {
	cursor int
	next   []int // per worker: next rank
}

// NewRoundRobin returns a round-robin policy.
func NewRoundRobin() *RoundRobin { return &RoundRobin{} }

// Place implements Policy.
func (r *RoundRobin) Place(_ *Request, v View) (Placement, bool) {
	n := v.Workers()
	for range n { // the next routable worker after the last one placed on
		w := r.cursor % n
		r.cursor = w + 1
		if v.Routable(w) {
			return Placement{w, r.rank(w, v), -1}, true
		}
	}
	return Placement{}, false // none routable (all starting): hold
}

func (r *RoundRobin) rank(w int, v View) int {
	if w >= len(r.next) {
		r.next = append(r.next, make([]int, w+1-len(r.next))...)
	}
	k := r.next[w] % v.Ranks(w)
	r.next[w] = k + 1
	return k
}

// Observe implements Policy: round robin ignores KV state.
func (*RoundRobin) Observe(int, []kv.Event) {}

// Next implements Policy: round robin never holds.
func (*RoundRobin) Next([]uint64) int { return 0 }

// PrefillDone implements Policy.
func (*RoundRobin) PrefillDone(uint64, timing.Time) {}

// Finished implements Policy.
func (*RoundRobin) Finished(uint64, timing.Time) {}

// Added implements Policy.
func (*RoundRobin) Added(int) {}

// Removed implements Policy.
func (*RoundRobin) Removed(int) {}

// Random picks a worker uniformly from a seeded stream; ranks rotate as in
// round robin.
type Random struct {
	RoundRobin
	rng *rand.Rand
}

// NewRandom returns a random policy seeded by seed.
func NewRandom(seed uint64) *Random {
	return &Random{rng: rand.New(rand.NewPCG(seed, 0x726f75746572))} // "router"
}

// Place implements Policy.
func (r *Random) Place(_ *Request, v View) (Placement, bool) {
	n, k := v.Workers(), 0
	for w := range n {
		if v.Routable(w) {
			k++
		}
	}
	if k == 0 {
		return Placement{}, false
	}
	// The j-th routable worker (all of them routable: the j-th worker, as
	// before workers came and went).
	j := r.rng.IntN(k)
	for w := range n {
		if v.Routable(w) {
			if j == 0 {
				return Placement{w, r.rank(w, v), -1}, true
			}
			j--
		}
	}
	panic("unreachable")
}
