package engine

// vLLM's priority scheduling (--scheduling-policy priority; issue 30 item
// 8), after vllm/v1/core/sched/request_queue.py and scheduler.py:
//
//   - PriorityRequestQueue keeps the waiting requests in a heap ordered by
//     (priority, arrival_time): lower values first, then earlier arrivals.
//     Its prepend_request is add_request: a preempted request goes back by
//     its key, not to the front.
//   - Scheduler.schedule, when a running request cannot get KV blocks,
//     preempts max(self.running, key=lambda r: (r.priority, r.arrival_time))
//     instead of the last one (FCFS pops the newest).
//
// The queue here stays a sorted deque (insertion by binary search) so the
// admission code reads its head as under FCFS; only runs with the policy
// on pay for the insertion. arrival is the submission order, which orders
// requests as vLLM's arrival_time (stamped when the engine receives them)
// does, without a wall clock.

// before reports whether a runs before b under priority scheduling.
func before(a, b *seq) bool {
	return a.priority < b.priority || a.priority == b.priority && a.arrival < b.arrival
}

// enqueue inserts s in the waiting queue by (priority, arrival).
func (b *book) enqueue(s *seq) {
	items := b.waiting.items()
	lo, hi := 0, len(items)
	for lo < hi { // the first request that s runs before
		m := int(uint(lo+hi) >> 1)
		if before(s, items[m]) {
			hi = m
		} else {
			lo = m + 1
		}
	}
	b.waiting.insert(lo, s)
}

// victim is the index of the running request vLLM's priority scheduler
// preempts: the largest (priority, arrival).
func (c *Core) victim() int {
	v := 0
	for i, s := range c.running {
		if before(c.running[v], s) {
			v = i
		}
	}
	return v
}

// insert puts s at position i of the queue (0: the front).
func (d *deque[T]) insert(i int, s T) {
	if i == 0 {
		d.pushFront(s)
		return
	}
	var zero T
	d.buf = append(d.buf, zero)
	at := d.head + i
	copy(d.buf[at+1:], d.buf[at:])
	d.buf[at] = s
}
