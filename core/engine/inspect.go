package engine

// RequestState is a read-only view of one request, for tests and tools.
type RequestState struct {
	Computed, Generated, Length, Preemptions int
	Running, Preempted                       bool
}

// State returns the state of request id.
func (c *Core) State(id uint64) (RequestState, bool) {
	s := c.find(id)
	if s == nil {
		return RequestState{}, false
	}
	return RequestState{
		Computed: s.computed, Generated: s.generated, Length: s.length,
		Preemptions: s.preemptions, Running: s.status == running, Preempted: s.status == preempted,
	}, true
}

// WaitingIDs and RunningIDs list the queues in order (tests and tools).
func (c *Core) WaitingIDs() []uint64 {
	var out []uint64
	for i := range c.waiting.len() {
		out = append(out, c.waiting.at(i).id)
	}
	return out
}

// RunningIDs lists the running queue in order.
func (c *Core) RunningIDs() []uint64 {
	out := make([]uint64, len(c.running))
	for i, s := range c.running {
		out[i] = s.id
	}
	return out
}

// find looks a held request up by id (tests and tools: O(n)).
func (c *Core) find(id uint64) *seq {
	for _, s := range c.running {
		if s.id == id {
			return s
		}
	}
	for i := range c.waiting.len() {
		if s := c.waiting.at(i); s.id == id {
			return s
		}
	}
	for _, s := range c.parked {
		if s.id == id {
			return s
		}
	}
	return nil
}
