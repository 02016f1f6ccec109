package tiers

import "fmt"

// Check verifies the tiers' invariants (for tests and fuzzing; O(size)):
// no tier holds more than its capacity; a block is incoming exactly while
// one copy into it is in flight, and pinned exactly by the copies reading
// it; every G1 slot a worker keeps quarantined has its offload copy queued
// or in flight; every onboarding has its legs in flight.
func (s *System) Check() error {
	f := s.inFlight()
	if err := s.checkWorkers(f); err != nil {
		return err
	}
	pools := []*pool{s.g3, s.g4}
	for _, w := range s.workers {
		pools = append(pools, w.g2)
	}
	for _, p := range pools {
		if p == nil {
			continue
		}
		if err := p.check(f); err != nil {
			return err
		}
	}
	return nil
}

// slotKey names one slot of one tier.
type slotKey struct {
	p    *pool
	slot int32
}

// flight tallies what the copies queued or in flight hold: the reads
// from and writes into each slot, each worker's queued offloads and each
// onboarding's legs.
type flight struct {
	reads       map[slotKey]int32
	writes      map[slotKey]int
	quarantined []int
	legs        map[int32]int32
}

// inFlight tallies every copy a link has in flight or has just ended.
func (s *System) inFlight() *flight {
	f := &flight{
		reads: map[slotKey]int32{}, writes: map[slotKey]int{},
		quarantined: make([]int, len(s.workers)), legs: map[int32]int32{},
	}
	for _, l := range s.links {
		for _, d := range l.done { // ended, applied at the next advance
			f.visit(s, &s.jobs[d.Job])
		}
		for _, t := range l.active {
			f.visit(s, &s.jobs[t.job])
		}
	}
	return f
}

// visit counts job j's blocks.
func (f *flight) visit(s *System, j *job) {
	w := s.workers[j.worker]
	dst := s.lower(j.tier)
	for _, b := range j.blocks {
		switch j.kind {
		case offloadJob:
			f.writes[slotKey{w.g2, b.dst}]++
			f.quarantined[j.worker]++
		case storeJob:
			f.writes[slotKey{w.g2, b.dst}]++
			f.quarantined[j.worker] += len(w.waiters[b.dst])
		case chainJob:
			f.reads[slotKey{w.g2, b.src}]++
			f.writes[slotKey{dst, b.dst}]++
		case stageJob:
			f.reads[slotKey{dst, b.src}]++
			f.writes[slotKey{w.g2, b.dst}]++
		case onboardJob:
			f.reads[slotKey{w.g2, b.src}]++
		}
	}
	if j.kind == stageJob || j.kind == onboardJob {
		f.legs[j.parent]++
	}
}

// checkWorkers adds the workers' queued offloads to f, then checks their
// quarantine counts and the onboardings against the legs in flight.
func (s *System) checkWorkers(f *flight) error {
	for i, w := range s.workers {
		for _, b := range w.queue {
			f.writes[slotKey{w.g2, b.dst}]++
			f.quarantined[i]++
		}
		// Queued stores are not placed in G2 yet (flushStores places them).
		if w.quarantined != f.quarantined[i] {
			return fmt.Errorf("tiers: worker %d keeps %d G1 slots quarantined, %d offload copies in flight", i, w.quarantined, f.quarantined[i])
		}
	}
	for j, n := range f.legs {
		if r := &s.jobs[j]; r.kind != requestJob || r.pending != n {
			return fmt.Errorf("tiers: onboarding of request %d waits for %d legs, %d in flight", r.id, r.pending, n)
		}
	}
	onboarding := 0
	for _, w := range s.workers {
		onboarding += w.onboarding
	}
	if onboarding != len(f.legs) {
		return fmt.Errorf("tiers: %d requests onboarding, %d with legs in flight", onboarding, len(f.legs))
	}
	return nil
}

// check verifies one tier: its capacity, every slot against the copies in
// f, its index and its LRU list.
func (p *pool) check(f *flight) error {
	if p.capacity > 0 && p.used > p.capacity {
		return fmt.Errorf("tiers: a tier holds %d blocks, capacity %d", p.used, p.capacity)
	}
	used, lru := 0, 0
	for i := range p.slots {
		sl := &p.slots[i]
		k := slotKey{p, int32(i)}
		if sl.state == pfree {
			if f.reads[k] > 0 || f.writes[k] > 0 {
				return fmt.Errorf("tiers: a copy uses free slot %d", i)
			}
			continue
		}
		used++
		if err := p.checkSlot(int32(i), f.reads[k], f.writes[k]); err != nil {
			return err
		}
		if sl.inLRU {
			lru++
		}
	}
	n, stray := 0, false
	p.order.each(func(pos uint32, e lruEntry) {
		n++
		if sl := &p.slots[e.slot]; !sl.inLRU || p.order.at[e.slot] != pos || sl.hash != e.hash {
			stray = true
		}
	})
	if stray || n != p.order.live {
		return fmt.Errorf("tiers: the LRU order names %d blocks (counts %d), not each in its slot", n, p.order.live)
	}
	if used != p.used || n != lru || p.byHash.n-p.byHash.stale != used {
		return fmt.Errorf("tiers: a tier counts %d blocks, holds %d (%d indexed), LRU %d of %d", p.used, used, p.byHash.n-p.byHash.stale, n, lru)
	}
	return nil
}

// checkSlot verifies a held slot i read by reads copies and written by
// writes: findable by its hash, incoming exactly while written, pinned by
// its readers and in the LRU list exactly while resident and unpinned.
func (p *pool) checkSlot(i int32, reads int32, writes int) error {
	sl := &p.slots[i]
	if got, ok := p.byHash.get(sl.hash, p.slots); !ok || got != i {
		return fmt.Errorf("tiers: block %x in slot %d is not findable", sl.hash, i)
	}
	if (sl.state == incoming) != (writes == 1) || writes > 1 {
		return fmt.Errorf("tiers: block %x is %v with %d copies into it", sl.hash, sl.state, writes)
	}
	if sl.pins != reads {
		return fmt.Errorf("tiers: block %x pinned %d times, read by %d copies", sl.hash, sl.pins, reads)
	}
	if sl.inLRU != (sl.state == resident && sl.pins == 0) {
		return fmt.Errorf("tiers: block %x (%v, %d pins) in LRU: %v", sl.hash, sl.state, sl.pins, sl.inLRU)
	}
	return nil
}

// InG2 reports whether the worker's G2 holds hash (resident).
func (w *Worker) InG2(hash uint64) bool {
	_, ok := w.g2.residentSlot(hash)
	return ok
}

func (s pstate) String() string { return [...]string{"free", "incoming", "resident"}[s] }
