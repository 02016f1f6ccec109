package router

// The KV router queue's priorities (issue 30 item 8), after Dynamo's
// lib/kv-router/src/scheduling/policy_queue.rs as the spec gives it
// (§1.1, §10.11): each held request carries (strict_priority,
// policy_score, enqueue sequence); the queue pops the largest strict
// priority, then the largest score, then the earliest enqueued. The score
// folds the request's priority in as a jump of max(priority, 0) seconds:
//
//	fcfs: jump − arrival_s    lcfs: jump + arrival_s
//	wspt: (1 + jump) / max(uncached prompt tokens, 1)
//
// So the router, unlike vLLM's engine scheduler, runs larger priorities
// first and ignores negative ones: that is Dynamo's contract, kept here.
// Until some held request carries a priority, Next keeps its cheaper
// orders (kv.go), which are the same orders with every jump 0.

// ranks reports whether q moves the queue's order.
func (q queuedSeq) ranks() bool { return q.jump != 0 || q.strict != 0 }

// hold records q as held with the queue key it gets from request r.
func (r *KV) hold(req *Request, q queuedSeq) {
	r.unhold(req.ID) // a request offered again replaces its entry
	q.arrival, q.jump, q.strict = req.Arrival, float64(max(req.Priority, 0)), req.StrictPriority
	if q.ranks() {
		r.ranked++
	}
	r.queued[req.ID] = q
}

// unhold forgets held request id.
func (r *KV) unhold(id uint64) {
	if q, ok := r.queued[id]; ok {
		if q.ranks() {
			r.ranked--
		}
		delete(r.queued, id)
	}
}

// score is q's policy score under the configured queue policy.
func (r *KV) score(q queuedSeq) float64 {
	switch r.cfg.QueuePolicy {
	case "lcfs":
		return q.jump + max(q.arrival.Ms()/1000, 0)
	case "wspt":
		return (1 + q.jump) / float64(max(q.isl-min(q.cached, q.isl), 1))
	}
	return q.jump - max(q.arrival.Ms()/1000, 0)
}

// nextRanked is the held request the queue pops: strict priority, then
// score, larger first; the earliest held among equals (held is in
// enqueue order).
func (r *KV) nextRanked(held []uint64) int {
	best := 0
	bq := r.queued[held[0]]
	bs := r.score(bq)
	for i := 1; i < len(held); i++ {
		q := r.queued[held[i]]
		s := r.score(q)
		if q.strict > bq.strict || q.strict == bq.strict && s > bs {
			best, bq, bs = i, q, s
		}
	}
	return best
}
