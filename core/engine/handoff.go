package engine

import "slices"

// Disaggregated serving (spec §7): a prefill worker (Config.Prefill) runs a
// prompt and, on the coordinated bootstrap path, holds its KV after the
// request ends until Release; a decode worker (Config.Decode) takes the
// prompt's KV from it: Reserve queues the request for room, a pass start
// grants the reservation (Pass.Reserved), and Activate, once the transfer
// is over, makes the request decode with its prompt computed. Cancel drops
// a hold or a reservation when the handoff fails. Written once, in the
// request book, for both cores.

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
func (b *book) Reserve(r Request) (Reason, error) {
	s, err := b.initSeq(r)
	if err != nil {
		return NotRejected, err
	}
	// A prompt no pass could recompute after a preemption is rejected as
	// on the prefill side (Config.PromptReason).
	if why := b.cfg.PromptReason(s.promptLen); why != NotRejected {
		b.retire(s)
		return why, nil
	}
	if s.knownBlocks(b.cfg.BlockSize) > b.cfg.NumBlocks {
		b.retire(s)
		return KVCapacity, nil
	}
	s.fresh = false
	b.live++
	b.pending.pushBack(s)
	return NotRejected, nil
}

// grantReservations reserves room for pending transfers in arrival order,
// ahead of any other work of the pass, and stops at the first that does
// not fit (as the waiting queue does).
func (b *book) grantReservations() {
	bs := b.cfg.BlockSize
	for b.pending.len() > 0 && (b.cfg.MaxSeqs == 0 || len(b.running)+len(b.reserved) < b.cfg.MaxSeqs) {
		s := b.pending.front()
		prefix, ok := b.mem.reservePrompt(s)
		if !ok {
			return
		}
		b.pending.popFront()
		s.cachedPrefix, s.admitCached = prefix, prefix
		b.reserved = append(b.reserved, s)
		b.pass.Reserved = append(b.pass.Reserved, Reservation{ID: s.id, Resident: prefix, Missing: missing(s.promptLen, prefix/bs, bs)})
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
func (b *book) Activate(id uint64) bool {
	s, ok := take(&b.reserved, seqID(id))
	if !ok {
		return false
	}
	b.mem.fillPrompt(s)
	s.computed, s.status = s.promptLen, running
	b.running = append(b.running, s)
	return true
}

// Release ends a finished prefill's hold on its KV (after the transfer, or
// when the handoff is canceled); false if id holds nothing.
func (b *book) Release(id uint64) bool {
	s, ok := take(&b.holds, seqID(id))
	if !ok {
		return false
	}
	b.mem.drop(s)
	b.retire(s)
	return true
}

// Cancel drops request id's reservation, granted or pending; false if it
// has none.
func (b *book) Cancel(id uint64) bool {
	if s, ok := take(&b.reserved, seqID(id)); ok {
		b.cancel(s)
		return true
	}
	if s, ok := takeQueued(&b.pending, id); ok {
		b.cancel(s)
		return true
	}
	return false
}

// takeQueued removes request id from q, if q holds it.
func takeQueued(q *deque[*seq], id uint64) (*seq, bool) {
	for i, s := range q.items() {
		if s.id == id {
			q.remove(i)
			return s, true
		}
	}
	return nil, false
}

func (b *book) cancel(s *seq) {
	b.mem.drop(s)
	b.live--
	b.retire(s)
}

// Abort ends a waiting or running request between passes, as vLLM and
// SGLang do when a client goes away: it emits nothing, and its KV is freed
// (computed blocks stay cached, as on completion: SGLang caches an
// unfinished request's pages in its radix tree). It reports false when
// the core does not hold the request in its waiting queue or running
// batch: unknown, parked for a lower-tier onboarding, or a disaggregated
// hold or reservation. A driver tries again after the request's next pass.
func (b *book) Abort(id uint64) bool {
	if s, ok := takeQueued(&b.waiting, id); ok {
		b.abort(s)
		return true
	}
	for i, s := range b.running {
		if s.id == id {
			b.running = slices.Delete(b.running, i, i+1)
			b.mem.keep(s)
			b.abort(s)
			return true
		}
	}
	return false
}

// abort frees s. Between passes nothing refers to it, so its state is
// recycled now (a rank left without work steps no pass to recycle it).
func (b *book) abort(s *seq) {
	b.mem.drop(s)
	b.live--
	b.free = append(b.free, s)
}

// Abort aborts request id on whichever rank holds it (see book.Abort),
// skipping the ranks of lanes busy says have a pass in flight.
func (w *Worker) Abort(id uint64, busy func(lane int) bool) bool {
	for r, c := range w.Ranks {
		if !busy(w.LaneOf(r)) && c.Abort(id) {
			return true
		}
	}
	return false
}
