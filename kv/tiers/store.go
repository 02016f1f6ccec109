package tiers

// Write-through host offload (kv_cache.tiers.offload: on_store).
//
// Real deployments copy a block down to host memory when it is stored,
// not when the device evicts it: vLLM's native CPU offloading connector
// (vllm/distributed/kv_transfer/kv_connector/v1/offloading_connector.py)
// schedules a store of every newly full block after the step that computed
// it and transfers it asynchronously, LMCache stores a request's KV chunks
// as they are produced, and Dynamo KVBM's host offload does the same. The
// copy is off the allocation's critical path: when the device later evicts
// the block, its host copy already exists and the slot frees at once. Only
// a block whose copy is still in flight holds its device slot until the
// copy ends (vLLM delays freeing a request's blocks while their stores
// are pending).
//
// Stores travel on the worker's own G1→G2 (D2H) link, batched by
// offload_batch_blocks and sharing it by processor sharing, so a burst of
// stores contends with itself exactly like eviction offloads do.

// Store takes a block G1 just stored (made findable) in slot: G2 gets a
// copy unless it already holds or receives one, or has no room (then the
// block lives in G1 only). Placing it in G2 waits for the next Flush (G2's
// table is large and cold: a batch's probes overlap their misses), and so
// does its copy.
func (w *Worker) Store(hash uint64, slot int32) {
	// Only queued: G1 calls Store while it groups its own Stored events,
	// which a G2 eviction's Removed event must not interleave. The copies
	// start at the pass's Flush, at the same virtual time.
	w.stores = append(w.stores, blk{hash: hash, src: slot, dst: -1})
}

// evictStored is Offload under write-through: a block G2 holds frees its
// G1 slot at once; one whose store is queued or in flight keeps its slot
// quarantined until the store lands; any other block (G2 had no room, or
// evicted it since) is dropped. The G2 slot is found through the G1 slot
// (g2of): a block known to have landed, and not evicted from G2 since
// (forget), frees without reading G2 at all. An eviction does not touch
// the G2 copy: G2's recency is its stores' and hits', as vLLM's LRU
// offloading manager touches blocks on store and lookup.
func (w *Worker) evictStored(hash uint64, slot int32) bool {
	if len(w.stores) > 0 {
		w.flushStores() // a queued store of it starts now, at the pass start
		w.sys.note(w.now)
	}
	if int(slot) >= len(w.g2of) {
		return false
	}
	v := w.g2of[slot]
	w.g2of[slot] = 0
	if v == 0 || v&landed != 0 {
		return false // nothing in G2, or a copy there
	}
	dst := int32(v-1) & dstMask
	w.g1of[dst] = 0
	sl := &w.g2.slots[dst]
	switch {
	case sl.hash != hash || sl.state != incoming:
		return false // resident (landed by staging), or G2 evicted it since
	case !sl.writing:
		return false // staging in from G3/G4: not this slot's copy
	}
	if w.waiters == nil {
		w.waiters = map[int32][]int32{}
	}
	w.waiters[dst] = append(w.waiters[dst], slot)
	w.quarantined++
	return true
}

// landed marks a g2of entry whose G2 copy is resident; dstMask takes it off.
const (
	landed  = uint32(1) << 31
	dstMask = int32(landed - 1)
)

// flushStores places the queued stores in G2 and starts their copies, in
// batches.
func (w *Worker) flushStores() {
	s := w.sys
	w.g2.warmBatch(w.stores) // the batch's misses in flight at once
	keep := w.stores[:0]
	for _, b := range w.stores {
		dst, added := w.g2.insert(b.hash)
		if !added {
			if dst >= 0 && w.g2.slots[dst].state == resident {
				w.g2.touch(dst)
				w.remember(b.src, dst, landed)
			} else if dst >= 0 {
				w.remember(b.src, dst, 0)
			}
			continue
		}
		w.remember(b.src, dst, 0)
		w.g2.slots[dst].writing = true
		b.dst = dst
		keep = append(keep, b)
	}
	for i := 0; i < len(keep); i += s.cfg.BatchBlocks {
		part := keep[i:min(i+s.cfg.BatchBlocks, len(keep))]
		j := s.newJob(storeJob, w.index)
		s.jobs[j].blocks = append(s.jobs[j].blocks, part...)
		s.start(w.up, G1ToG2, w.now, j)
	}
	w.stores = w.stores[:0]
}

// remember records that G1 slot src's block is in G2 slot dst (flag:
// landed if resident), and the way back.
func (w *Worker) remember(src, dst int32, flag uint32) {
	if int(src) >= len(w.g2of) {
		w.g2of = append(w.g2of, make([]uint32, int(src)+1-len(w.g2of))...)
	}
	if int(dst) >= len(w.g1of) {
		w.g1of = append(w.g1of, make([]int32, int(dst)+1-len(w.g1of))...)
	}
	w.g2of[src] = uint32(dst+1) | flag
	w.g1of[dst] = src + 1
}

// forget drops the G1 slot's record of G2 slot dst, which G2 evicted.
func (w *Worker) forget(dst int32) {
	if int(dst) >= len(w.g1of) {
		return
	}
	if g1 := w.g1of[dst] - 1; g1 >= 0 {
		w.g1of[dst] = 0
		if w.g2of[g1]&^landed == uint32(dst+1) {
			w.g2of[g1] = 0
		}
	}
}

// landStores applies a finished store batch: the blocks are resident in
// G2 (and chained on to G3/G4), and evicted G1 slots waiting for them are
// freed.
func (s *System) landStores(w *Worker, blocks []blk, at float64) {
	s.chain(w, blocks, at)
	for _, b := range blocks {
		w.g2.slots[b.dst].writing = false
		w.g2.land(b.dst)
		if int(b.src) < len(w.g2of) && w.g2of[b.src] == uint32(b.dst+1) {
			w.g2of[b.src] |= landed // its G1 slot still holds it
		}
		if len(w.waiters) == 0 {
			continue
		}
		if slots, ok := w.waiters[b.dst]; ok {
			w.freed = append(w.freed, slots...)
			w.quarantined -= len(slots)
			delete(w.waiters, b.dst)
		}
	}
	w.publish(blocks)
	s.stats.Tiers[0].Offloaded += int64(len(blocks))
}
