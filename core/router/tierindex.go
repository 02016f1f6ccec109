package router

import (
	"github.com/dynosim/dynosim-web/internal/idmap"
	"github.com/dynosim/dynosim-web/kv"
)

// The lower-tier part of the index (issue 31 item 2). Dynamo's KV router
// credits a prompt prefix a worker holds in host memory (G2) or on disk
// (G3) at host_cache_hit_weight and disk_cache_hit_weight per block
// (KvRouterConfig; mocker.md §8.7): onboarding such a block costs a copy,
// not a recomputation. The index learns those blocks from the workers'
// KV events of tier host_pinned (G2) and disk (G3), as Dynamo's indexer
// reads the StorageTier of KVBM's events.

// lowerSet is what one (worker, DP rank) holds below G1.
type lowerSet struct {
	host, disk idmap.Map
}

// applyLower applies one lower-tier event of worker. Lower tiers keep
// blocks by hash without lineage, so no parent or double-store check
// applies; a Removed of an unknown hash is ignored.
func (ix *Indexer) applyLower(worker int, ev *kv.Event) {
	var m *idmap.Map
	ls := ix.growLower(worker, ev.DPRank)
	switch ev.Tier {
	case kv.HostPinned:
		m = &ls.host
	case kv.Disk:
		m = &ls.disk
	default:
		return // G4 (object): not credited by the reference either
	}
	switch ev.Kind {
	case kv.Stored:
		for _, b := range ev.Blocks {
			m.Put(b.BlockHash, 1)
		}
	case kv.Removed:
		for _, h := range ev.Removed {
			m.Delete(h)
		}
	}
}

func (ix *Indexer) growLower(worker, rank int) *lowerSet {
	if worker >= len(ix.lower) {
		ix.lower = append(ix.lower, make([][]lowerSet, worker+1-len(ix.lower))...)
	}
	if rs := ix.lower[worker]; rank >= len(rs) {
		ix.lower[worker] = append(rs, make([]lowerSet, rank+1-len(rs))...)
	}
	return &ix.lower[worker][rank]
}

// LowerOverlap counts, from block from on (the end of the G1 match), the
// leading blocks of hashes (worker, rank) holds in a lower tier: host is
// those in G2, disk those in G3 only. The walk stops at the first block no
// tier holds, as an onboarding does (kv/tiers Lookup).
func (ix *Indexer) LowerOverlap(worker, rank int, hashes []uint64, from int) (host, disk int) {
	if worker < 0 || worker >= len(ix.lower) || rank < 0 || rank >= len(ix.lower[worker]) {
		return 0, 0
	}
	ls := &ix.lower[worker][rank]
	if ls.host.Len() == 0 && ls.disk.Len() == 0 {
		return 0, 0
	}
	for _, h := range hashes[min(from, len(hashes)):] {
		if _, ok := ls.host.Get(h); ok {
			host++
			continue
		}
		if _, ok := ls.disk.Get(h); ok {
			disk++
			continue
		}
		break
	}
	return host, disk
}
