package tiers

import "fmt"

// Check verifies the tiers' invariants (for tests and fuzzing; O(size)):
// no tier holds more than its capacity; a block is incoming exactly while
// one copy into it is in flight, and pinned exactly by the copies reading
// it; every G1 slot a worker keeps quarantined has its offload copy queued
// or in flight; every onboarding has its legs in flight.
func (s *System) Check() error {
	type key struct {
		p    *pool
		slot int32
	}
	reads, writes := map[key]int32{}, map[key]int{}
	quarantined := make([]int, len(s.workers))
	legs := map[int32]int32{}
	visit := func(j *job) {
		w := s.workers[j.worker]
		dst := s.lower(j.tier)
		for _, b := range j.blocks {
			switch j.kind {
			case offloadJob:
				writes[key{w.g2, b.dst}]++
				quarantined[j.worker]++
			case chainJob:
				reads[key{w.g2, b.src}]++
				writes[key{dst, b.dst}]++
			case stageJob:
				reads[key{dst, b.src}]++
				writes[key{w.g2, b.dst}]++
			case onboardJob:
				reads[key{w.g2, b.src}]++
			}
		}
		if j.kind == stageJob || j.kind == onboardJob {
			legs[j.parent]++
		}
	}
	for _, l := range s.links {
		for _, d := range l.done { // ended, applied at the next advance
			visit(&s.jobs[d.Job])
		}
		for _, t := range l.active {
			visit(&s.jobs[t.job])
		}
	}
	for i, w := range s.workers {
		for _, b := range w.queue {
			writes[key{w.g2, b.dst}]++
			quarantined[i]++
		}
		if w.quarantined != quarantined[i] {
			return fmt.Errorf("tiers: worker %d keeps %d G1 slots quarantined, %d offload copies in flight", i, w.quarantined, quarantined[i])
		}
	}
	for j, n := range legs {
		if r := &s.jobs[j]; r.kind != requestJob || r.pending != n {
			return fmt.Errorf("tiers: onboarding of request %d waits for %d legs, %d in flight", r.id, r.pending, n)
		}
	}
	onboarding := 0
	for _, w := range s.workers {
		onboarding += w.onboarding
	}
	if onboarding != len(legs) {
		return fmt.Errorf("tiers: %d requests onboarding, %d with legs in flight", onboarding, len(legs))
	}
	pools := []*pool{s.g3, s.g4}
	for _, w := range s.workers {
		pools = append(pools, w.g2)
	}
	for _, p := range pools {
		if p == nil {
			continue
		}
		if p.capacity > 0 && p.used > p.capacity {
			return fmt.Errorf("tiers: a tier holds %d blocks, capacity %d", p.used, p.capacity)
		}
		used, lru := 0, 0
		for i := range p.slots {
			sl := &p.slots[i]
			k := key{p, int32(i)}
			if sl.state == pfree {
				if reads[k] > 0 || writes[k] > 0 {
					return fmt.Errorf("tiers: a copy uses free slot %d", i)
				}
				continue
			}
			used++
			if got, ok := p.byHash.get(sl.hash, p.slots); !ok || got != int32(i) {
				return fmt.Errorf("tiers: block %x in slot %d is not findable", sl.hash, i)
			}
			if (sl.state == incoming) != (writes[k] == 1) || writes[k] > 1 {
				return fmt.Errorf("tiers: block %x is %v with %d copies into it", sl.hash, sl.state, writes[k])
			}
			if sl.pins != reads[k] {
				return fmt.Errorf("tiers: block %x pinned %d times, read by %d copies", sl.hash, sl.pins, reads[k])
			}
			if sl.inLRU != (sl.state == resident && sl.pins == 0) {
				return fmt.Errorf("tiers: block %x (%v, %d pins) in LRU: %v", sl.hash, sl.state, sl.pins, sl.inLRU)
			}
			if sl.inLRU {
				lru++
			}
		}
		n := 0
		for c := p.head; c >= 0; c = p.slots[c].next {
			n++
		}
		if used != p.used || n != lru || p.byHash.n != used {
			return fmt.Errorf("tiers: a tier counts %d blocks, holds %d (%d indexed), LRU %d of %d", p.used, used, p.byHash.n, n, lru)
		}
	}
	return nil
}

// InG2 reports whether the worker's G2 holds hash (resident).
func (w *Worker) InG2(hash uint64) bool {
	_, ok := w.g2.residentSlot(hash)
	return ok
}

func (s pstate) String() string { return [...]string{"free", "incoming", "resident"}[s] }
