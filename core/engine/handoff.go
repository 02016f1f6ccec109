package engine

import "slices"

// Disaggregated serving (spec §7): a prefill worker (Config.Prefill) runs a
// prompt and, on the coordinated bootstrap path, holds its KV after the
// request ends until Release; a decode worker (Config.Decode) takes the
// prompt's KV from it: Reserve queues the request for room, a pass start
// grants the reservation (Pass.Reserved), and Activate, once the transfer
// is over, makes the request decode with its prompt computed. Cancel drops
// a hold or a reservation when the handoff fails.

// Reservation is a granted destination reservation.
type Reservation struct {
	ID uint64
	// Resident is the prompt tokens already in the destination's prefix
	// cache (full blocks); Missing is what the transfer must bring: the
	// blocks not resident, as tokens, capped at the prompt.
	Resident, Missing int
}

// missing is the tokens of a prompt of n tokens outside its first resident
// blocks: block-granular, as the reference counts them, but never more than
// the prompt (a partial last block is not a whole block of transfer).
func missing(n, resident, bs int) int {
	return min(n, ((n+bs-1)/bs-resident)*bs)
}

// Reserve queues request r on a decode worker: a pass start reserves KV for
// its whole prompt, reusing the destination's cached prefix. It rejects a
// prompt that no reservation could ever hold.
func (c *Core) Reserve(r Request) (Reason, error) {
	s, err := c.initSeq(r)
	if err != nil {
		return NotRejected, err
	}
	if c.cfg.MaxModelLen > 0 && s.promptLen >= c.cfg.MaxModelLen {
		c.retire(s)
		return MaxModelLen, nil
	}
	if s.knownBlocks(c.cfg.BlockSize) > c.cfg.NumBlocks {
		c.retire(s)
		return KVCapacity, nil
	}
	s.fresh = false
	c.live++
	c.pending.pushBack(s)
	return NotRejected, nil
}

// grantReservations reserves room for pending transfers in arrival order,
// ahead of any other work of the pass, and stops at the first that does
// not fit (as the waiting queue does).
func (c *Core) grantReservations() {
	bs := c.cfg.BlockSize
	for c.pending.len() > 0 && (c.cfg.MaxSeqs == 0 || len(c.running)+len(c.reserved) < c.cfg.MaxSeqs) {
		s := c.pending.front()
		overlap, active := c.kv.Match(s.hashes)
		if s.knownBlocks(bs)-active > c.cfg.NumBlocks-c.kv.Pool.Active() ||
			!c.kv.Allocate(&s.lease, s.promptLen, overlap, s.hashes) {
			return
		}
		c.pending.popFront()
		s.cachedPrefix, s.admitCached = overlap*bs, overlap*bs
		c.reserved = append(c.reserved, s)
		c.pass.Reserved = append(c.pass.Reserved, Reservation{ID: s.id, Resident: overlap * bs, Missing: missing(s.promptLen, overlap, bs)})
	}
}

// take removes and returns the first request of *list that is, if any.
func take[T any](list *[]T, is func(T) bool) (T, bool) {
	i := slices.IndexFunc(*list, is)
	if i < 0 {
		var zero T
		return zero, false
	}
	r := (*list)[i]
	*list = slices.Delete(*list, i, i+1)
	return r, true
}

func seqID(id uint64) func(*seq) bool { return func(s *seq) bool { return s.id == id } }

// Activate makes a reserved request's prompt computed (its KV arrived): it
// joins the running requests and emits its first token in the next pass.
func (c *Core) Activate(id uint64) bool {
	s, ok := take(&c.reserved, seqID(id))
	if !ok {
		return false
	}
	c.kv.Finalize(&s.lease, 0, s.promptLen, s.hashes, s.locals)
	s.computed, s.status = s.promptLen, running
	c.running = append(c.running, s)
	return true
}

// Release ends a finished prefill's hold on its KV (after the transfer, or
// when the handoff is canceled); false if id holds nothing.
func (c *Core) Release(id uint64) bool {
	s, ok := take(&c.holds, seqID(id))
	if !ok {
		return false
	}
	c.kv.Release(&s.lease)
	c.retire(s)
	return true
}

// Cancel drops request id's reservation, granted or pending; false if it
// has none.
func (c *Core) Cancel(id uint64) bool {
	if s, ok := take(&c.reserved, seqID(id)); ok {
		c.drop(s)
		return true
	}
	for i, s := range c.pending.items() {
		if s.id == id {
			c.pending.remove(i)
			c.drop(s)
			return true
		}
	}
	return false
}

func (c *Core) drop(s *seq) {
	c.kv.Release(&s.lease)
	c.live--
	c.retire(s)
}
