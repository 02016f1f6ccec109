package replay

import "github.com/dynosim/dynosim-web/timing"

// Kind is the type of an event. Kinds are listed in the order the loop
// applies them within one timestamp (spec §8.5, §13.2 item 9): completions,
// then workers becoming ready, then arrivals and routing; idle workers start
// their passes after that (a drained worker leaves at its last pass end), then the planner
// ticks. The queue orders by (time, kind, sequence), so that order holds
// whatever order events were pushed in, and ties within a kind never
// depend on anything but insertion order.
type Kind uint8

const (
	// PassEnd: a worker's pass completes; its outputs and KV events become
	// visible.
	PassEnd Kind = iota
	// TransferDone: a KV transfer between pools completes (P/D handoff).
	TransferDone
	// Dispatch: a released request has passed the serving frontend
	// (Options.Frontend) and reaches the router.
	Dispatch
	// WorkerReady: a started worker finished loading and may take requests.
	WorkerReady
	// Arrival: a follow-up turn of a session becomes ready (first turns
	// come from the arrival source, which may depend on the loop's state).
	Arrival
	// PlannerTick: the planner observes the cluster and may scale it.
	PlannerTick
)

// event is one timed entry of the loop's queue.
type event struct {
	at            timing.Time
	order         uint64 // kind << 56 | sequence: one comparison orders both
	kind          Kind
	worker, lane  int32  // PassEnd: global worker index and its lane
	session, turn int32  // Arrival
	req           uint64 // TransferDone, Dispatch: the request
	// PassEnd only: when the pass started and the settle iteration of its
	// start (ahead.go). Pass ends tie by (started, iter, worker, lane),
	// the order the loop pushes them in when it steps every pass itself,
	// so a pass stepped ahead of the clock keeps its place among ties.
	started timing.Time
	iter    uint32
}

// queue is a binary min-heap of events ordered by (at, kind, seq).
// Concrete (no closures, no interfaces) so the hot loop stays cheap, in
// wasm especially.
type queue struct {
	h   []event
	seq uint64
}

func (q *queue) less(i, j int) bool {
	a, b := &q.h[i], &q.h[j]
	return a.at < b.at || a.at == b.at && (a.order < b.order || a.order == b.order && passBefore(a, b))
}

// passBefore orders two pass ends of the same time (their order fields
// are equal only for PassEnd: push stamps no sequence on them).
func passBefore(a, b *event) bool {
	if a.started != b.started {
		return a.started < b.started
	}
	if a.iter != b.iter {
		return a.iter < b.iter
	}
	if a.worker != b.worker {
		return a.worker < b.worker
	}
	return a.lane < b.lane
}

func (q *queue) len() int { return len(q.h) }

// top is the next event; the queue must not be empty.
func (q *queue) top() *event { return &q.h[0] }

// push adds e, stamping it with the next sequence number (2^56 of them
// are more than any run makes).
func (q *queue) push(e event) {
	q.seq++
	e.order = uint64(e.kind)<<56 | q.seq
	if e.kind == PassEnd {
		e.order = uint64(PassEnd) << 56 // passBefore orders them
	}
	q.h = append(q.h, e)
	q.up(len(q.h) - 1)
}

func (q *queue) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !q.less(i, p) {
			break
		}
		q.h[i], q.h[p] = q.h[p], q.h[i]
		i = p
	}
}

func (q *queue) pop() event {
	x := q.h[0]
	n := len(q.h) - 1
	q.h[0] = q.h[n]
	q.h = q.h[:n]
	q.down(0)
	return x
}

func (q *queue) down(i int) {
	n := len(q.h)
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && q.less(l, m) {
			m = l
		}
		if r < n && q.less(r, m) {
			m = r
		}
		if m == i {
			return
		}
		q.h[i], q.h[m] = q.h[m], q.h[i]
		i = m
	}
}

// drop removes every event of kind k (O(n); used once, when the request
// cap is reached and no further arrival may be released).
func (q *queue) drop(k Kind) {
	kept := q.h[:0]
	for _, e := range q.h {
		if e.kind != k {
			kept = append(kept, e)
		}
	}
	q.h = kept
	for i := len(q.h)/2 - 1; i >= 0; i-- {
		q.down(i)
	}
}
