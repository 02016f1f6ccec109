package tiers

import (
	"math"

	"github.com/dynosim/dynosim-web/kv"
	"github.com/dynosim/dynosim-web/timing"
)

// LinkKind names a directional link.
type LinkKind uint8

const (
	G1ToG2 LinkKind = iota // a worker's offload link
	G2ToG1                 // a worker's onboard link
	G2ToG3                 // shared
	G3ToG2                 // shared
	G2ToG4                 // shared
	G4ToG2                 // shared
	nLinks
)

// String is the link's report name.
func (k LinkKind) String() string {
	return [...]string{"g1_to_g2", "g2_to_g1", "g2_to_g3", "g3_to_g2", "g2_to_g4", "g4_to_g2"}[k]
}

// System is the lower tiers of one worker pool: the G3 pool and the G4
// store its workers share, their links, and every worker's G2 and links.
// All of it moves in one time order (advance), whoever ticks it.
type System struct {
	cfg      Config
	g3, g4   *pool
	shared   [4]*Link // G2→G3, G3→G2, G2→G4, G4→G2
	links    []*Link  // the shared links, then each worker's offload and onboard links
	kinds    []LinkKind
	workers  []*Worker
	jobs     []job
	freeJobs []int32
	ids      uint64 // transfer ids, unique across links
	next     float64
	dirty    bool
	scratch  []Done
	hashes   []uint64
	g2Used   int
	stats    Stats
	series   series
}

type jobKind uint8

const (
	offloadJob jobKind = iota // G1→G2 of evicted blocks
	chainJob                  // G2→G3 or G2→G4 of blocks that landed in G2
	stageJob                  // G3/G4→G2, the first leg of an onboarding
	onboardJob                // G2→G1
	requestJob                // one request's onboarding: its legs still in flight
	storeJob                  // G1→G2 write-through of stored blocks (store.go)
)

// blk is one block of a transfer: its hash, the slot it is read from and
// the slot it is written to, in the tiers the job's kind implies.
type blk struct {
	hash     uint64
	src, dst int32
}

type job struct {
	kind    jobKind
	tier    uint8 // chain and stage jobs: 3 or 4
	worker  int32
	parent  int32  // stage and onboard jobs: their requestJob
	pending int32  // requestJob: legs in flight
	id      uint64 // requestJob: the request
	blocks  []blk
}

// New returns the tiers of one pool.
func New(cfg Config) *System {
	s := &System{cfg: cfg, next: math.Inf(1), series: newSeries()}
	if cfg.G3Blocks > 0 {
		s.g3 = newPool(cfg.G3Blocks)
		s.g3.onEvict = func(uint64, int32) { s.stats.Tiers[1].Evicted++ }
	}
	if cfg.G4 {
		s.g4 = newPool(0)
	}
	for i, gbps := range []float64{cfg.G2ToG3, cfg.G3ToG2, cfg.G2ToG4, cfg.G4ToG2} {
		s.shared[i] = s.addLink(G2ToG3+LinkKind(i), gbps)
	}
	return s
}

// Config is the resolved configuration.
func (s *System) Config() Config { return s.cfg }

func (s *System) addLink(k LinkKind, gbps float64) *Link {
	l := NewLink(gbps)
	l.onBusy = func(from, to float64) { s.series.busy(k, from, to) }
	s.links = append(s.links, l)
	s.kinds = append(s.kinds, k)
	return l
}

// Worker is one engine core's view of the tiers: its own G2 and links.
type Worker struct {
	sys         *System
	index       int32
	g2          *pool
	up, down    *Link
	events      *kv.EventLog
	now         float64
	queue       []blk             // evicted G1 blocks waiting for a batch
	stores      []blk             // write-through: stored G1 blocks waiting for a batch
	waiters     map[int32][]int32 // write-through: G2 slot in flight → evicted G1 slots waiting for it
	g2of        []uint32          // write-through: G1 slot → its block's G2 slot + 1 | landed (0: none; store.go)
	g1of        []int32           // write-through: G2 slot → the G1 slot + 1 whose g2of names it
	freed       []int32           // G1 slots whose copy has finished
	ready       []uint64          // requests whose onboarding has finished
	quarantined int
	onboarding  int // requests with legs in flight
	staging     int // stage legs in flight
	run         []blk
	runTier     []uint8
}

// Join adds a worker (an engine core); events, if not nil, receive its G2
// Stored and Removed events (tier host_pinned).
func (s *System) Join(events *kv.EventLog) *Worker {
	w := &Worker{sys: s, index: int32(len(s.workers)), g2: newPool(s.cfg.G2Blocks), events: events}
	w.g2.total = &s.g2Used
	w.g2.onEvict = func(h uint64, slot int32) {
		w.forget(slot)
		s.stats.Tiers[0].Evicted++
		if w.events != nil {
			w.events.RemovedIn(kv.HostPinned, []uint64{h})
		}
	}
	w.up = s.addLink(G1ToG2, s.cfg.G1ToG2)
	w.down = s.addLink(G2ToG1, s.cfg.G2ToG1)
	s.workers = append(s.workers, w)
	s.dirty = true
	return w
}

// Tick advances the tiers to now: copies that finished by then land, free
// their G1 slots (Freed) and release onboarded requests (Ready).
func (w *Worker) Tick(now timing.Time) {
	w.now = now.Ms()
	w.sys.advance(w.now)
}

// Freed returns the G1 slots whose offload copy has finished, and forgets
// them (the slice is reused).
func (w *Worker) Freed() []int32 {
	f := w.freed
	w.freed = w.freed[:0]
	return f
}

// Ready returns the requests whose onboarding has finished, in completion
// order, and forgets them (the slice is reused).
func (w *Worker) Ready() []uint64 {
	r := w.ready
	w.ready = w.ready[:0]
	return r
}

// Quarantined is the number of G1 slots the worker's G1 keeps quarantined:
// those whose offload copy is queued or in flight, and those whose copy
// ended while another worker advanced the tiers, until Freed hands them
// back.
func (w *Worker) Quarantined() int { return w.quarantined + len(w.freed) }

// Onboarding is the number of requests waiting for their blocks.
func (w *Worker) Onboarding() int { return w.onboarding }

// Offload takes a block G1 just evicted (spec §5.4). It reports whether
// the G1 slot must stay reserved until its copy ends (Freed returns it
// then); false means the slot is free at once: G2 already holds the hash,
// or every G2 block is pinned or incoming.
func (w *Worker) Offload(hash uint64, slot int32) bool {
	if w.sys.cfg.WriteThrough {
		return w.evictStored(hash, slot)
	}
	dst, added := w.g2.insert(hash)
	if !added {
		if dst >= 0 && w.g2.slots[dst].state == resident {
			w.g2.touch(dst) // G2 has it: no copy
		}
		return false
	}
	w.queue = append(w.queue, blk{hash: hash, src: slot, dst: dst})
	w.quarantined++
	if len(w.queue) >= w.sys.cfg.BatchBlocks {
		w.Flush()
	}
	return true
}

// Flush starts the copies of the evicted blocks not yet sent, in batches
// of at most offload_batch_blocks. The engine flushes at the end of each
// pass's scheduling, so a partial batch never waits for more evictions.
func (w *Worker) Flush() {
	s := w.sys
	w.flushStores()
	for i := 0; i < len(w.queue); i += s.cfg.BatchBlocks {
		part := w.queue[i:min(i+s.cfg.BatchBlocks, len(w.queue))]
		j := s.newJob(offloadJob, w.index)
		s.jobs[j].blocks = append(s.jobs[j].blocks, part...)
		s.start(w.up, G1ToG2, w.now, j)
	}
	w.queue = w.queue[:0]
	s.note(w.now)
}

// Lookup counts the leading blocks of hashes a lower tier holds (each in
// G2, G3 or G4), the prefix an onboarding could bring back.
func (w *Worker) Lookup(hashes []uint64) int {
	s := w.sys
	for i, h := range hashes {
		if i%lookAhead == 0 && i > 0 {
			// A hit's run is long (a prompt's prefix): load the next
			// blocks' table entries at once, so their misses overlap.
			for _, n := range hashes[i:min(i+lookAhead, len(hashes))] {
				w.g2.byHash.warm(n)
				if s.g3 != nil {
					s.g3.byHash.warm(n)
				}
			}
		}
		if _, ok := w.g2.residentSlot(h); ok {
			continue
		}
		if s.g3 != nil {
			if _, ok := s.g3.residentSlot(h); ok {
				continue
			}
		}
		if s.g4 != nil {
			if _, ok := s.g4.residentSlot(h); ok {
				continue
			}
		}
		return i
	}
	return len(hashes)
}

// lookAhead is how many blocks Lookup loads ahead.
const lookAhead = 16

// Onboard starts bringing the blocks of hashes (a run Lookup found) back
// to G1 for request id, whose destination G1 slots the engine has
// reserved (spec §5.5). G2 blocks go G2→G1 at once; G3 and G4 blocks stage
// through G2 first, which needs G2 room: without it only the leading
// G2-resident blocks are used. It returns how many leading blocks come;
// when they have all arrived, Ready returns id.
func (w *Worker) Onboard(id uint64, hashes []uint64) int {
	lead := w.gatherRun(hashes)
	w.stageRoom(lead)
	if len(w.run) == 0 {
		return 0
	}
	s := w.sys
	req := s.newJob(requestJob, w.index)
	s.jobs[req].id = id
	w.onboarding++
	for _, tier := range []uint8{2, 3, 4} {
		w.startLeg(req, tier)
	}
	s.note(w.now)
	return len(w.run)
}

// gatherRun sets w.run to the leading blocks of hashes some tier holds,
// with each one's tier in w.runTier, pinning the G2 ones. It returns lead,
// the length of the run's G2-resident prefix.
func (w *Worker) gatherRun(hashes []uint64) (lead int) {
	s := w.sys
	w.run, w.runTier = w.run[:0], w.runTier[:0]
	lead = -1
	for i, h := range hashes {
		if slot, ok := w.g2.residentSlot(h); ok {
			w.g2.pin(slot) // no staging below may evict it
			w.run, w.runTier = append(w.run, blk{hash: h, src: slot}), append(w.runTier, 2)
			continue
		}
		if lead < 0 {
			lead = i
		}
		src, tier := int32(-1), uint8(3)
		if s.g3 != nil {
			src = residentOr(s.g3, h)
		}
		if src < 0 && s.g4 != nil {
			src, tier = residentOr(s.g4, h), 4
		}
		if src < 0 {
			break
		}
		w.run, w.runTier = append(w.run, blk{hash: h, src: src, dst: -1}), append(w.runTier, tier)
	}
	if lead < 0 {
		lead = len(w.run)
	}
	return lead
}

// stageRoom reserves G2 room for the run's staged (G3, G4) blocks; without
// room for all of them it undoes what lies past lead and cuts the run there.
func (w *Worker) stageRoom(lead int) {
	// Room in G2 for the staged blocks, or no staging at all.
	staged := true
	for i := range w.run {
		if w.runTier[i] == 2 {
			continue
		}
		dst, added := w.g2.insert(w.run[i].hash)
		if !added { // no room, or an offload of it is still in flight
			staged = false
			break
		}
		w.run[i].dst = dst
	}
	if !staged {
		for i := lead; i < len(w.run); i++ {
			if w.runTier[i] == 2 {
				w.g2.unpin(w.run[i].src)
			} else if w.run[i].dst >= 0 {
				w.g2.cancel(w.run[i].dst)
			}
		}
		w.run, w.runTier = w.run[:lead], w.runTier[:lead]
	}
}

// startLeg starts the copy of the run's blocks held in tier for onboarding
// job req, if there are any: G2→G1 directly, G3 and G4 staging into G2.
func (w *Worker) startLeg(req int32, tier uint8) {
	s := w.sys
	j := int32(-1)
	for i, b := range w.run {
		if w.runTier[i] != tier {
			continue
		}
		if j < 0 {
			kind := stageJob
			if tier == 2 {
				kind = onboardJob
			}
			j = s.newJob(kind, w.index)
			s.jobs[j].parent, s.jobs[j].tier = req, tier
			s.jobs[req].pending++
		}
		s.jobs[j].blocks = append(s.jobs[j].blocks, b)
		st := &s.stats.Tiers[tier-2]
		st.Hits++
		if tier == 3 {
			s.g3.pin(b.src)
		} else if tier == 4 {
			s.g4.pin(b.src)
		}
	}
	switch {
	case j < 0:
	case tier == 2:
		s.start(w.down, G2ToG1, w.now, j)
	case tier == 3:
		w.staging++
		s.start(s.shared[1], G3ToG2, w.now, j)
	default:
		w.staging++
		s.start(s.shared[3], G4ToG2, w.now, j)
	}
}

// residentOr returns hash's slot in p if resident, else -1.
func residentOr(p *pool, h uint64) int32 {
	if slot, ok := p.residentSlot(h); ok {
		return slot
	}
	return -1
}

// Deadline is the earliest time a copy this worker waits for can finish
// (its offload link while G1 slots are quarantined, its onboard link, and
// the shared staging links while it stages): the stall rule's pass end
// (spec §5.6). ok is false when it waits for nothing.
func (w *Worker) Deadline() (timing.Time, bool) {
	t, ok := math.Inf(1), false
	consider := func(l *Link) {
		if at, has := l.Earliest(); has && at < t {
			t, ok = at, true
		}
	}
	if w.quarantined > 0 {
		consider(w.up)
	}
	if w.onboarding > 0 {
		consider(w.down)
		if w.staging > 0 {
			consider(w.sys.shared[1])
			consider(w.sys.shared[3])
		}
	}
	if !ok {
		return 0, false
	}
	return ceilNs(t), true
}

// ceilNs is the first nanosecond at or after ms, saturating at the horizon:
// a copy over a link of 1e-300 GB/s takes ~1e300 ms, which a plain
// conversion wraps to a negative time (and the replay spun on it).
func ceilNs(ms float64) timing.Time {
	return timing.CeilNs(ms * 1e6)
}

func (s *System) newJob(kind jobKind, worker int32) int32 {
	var j int32
	if n := len(s.freeJobs); n > 0 {
		j = s.freeJobs[n-1]
		s.freeJobs = s.freeJobs[:n-1]
	} else {
		j = int32(len(s.jobs))
		s.jobs = append(s.jobs, job{})
	}
	blocks := s.jobs[j].blocks[:0]
	s.jobs[j] = job{kind: kind, worker: worker, parent: -1, blocks: blocks}
	return j
}

func (s *System) freeJob(j int32) { s.freeJobs = append(s.freeJobs, j) }

// start sends job j over link l at now.
func (s *System) start(l *Link, k LinkKind, now float64, j int32) {
	n := len(s.jobs[j].blocks)
	bytes := float64(float64(n) * s.cfg.BlockBytes)
	s.ids++
	l.Start(now, s.ids, bytes, j)
	ls := &s.stats.Links[k]
	ls.Transfers++
	ls.Blocks += int64(n)
	ls.Bytes += bytes
	s.dirty = true
}

// advance completes, in time order across every link, each transfer that
// ends by now, and starts the legs they chain to at their end.
func (s *System) advance(now float64) {
	if !s.dirty && s.next > now+eps {
		return
	}
	for {
		t := math.Inf(1)
		for _, l := range s.links {
			if len(l.done) > 0 {
				t = min(t, l.done[0].At)
			}
			if at, ok := l.Earliest(); ok {
				t = min(t, at)
			}
		}
		if t > now+eps {
			s.next, s.dirty = t, false
			return
		}
		for _, l := range s.links {
			l.advance(t)
			if len(l.done) == 0 {
				continue
			}
			s.scratch = append(s.scratch[:0], l.done...)
			l.done = l.done[:0]
			for _, d := range s.scratch {
				s.complete(d)
			}
		}
	}
}

// complete applies a finished transfer.
func (s *System) complete(d Done) {
	j := &s.jobs[d.Job]
	w := s.workers[j.worker]
	switch j.kind {
	case offloadJob:
		s.chain(w, j.blocks, d.At) // pins what it copies on before it lands
		for _, b := range j.blocks {
			w.g2.land(b.dst)
			w.freed = append(w.freed, b.src)
		}
		w.publish(j.blocks)
		w.quarantined -= len(j.blocks)
		s.stats.Tiers[0].Offloaded += int64(len(j.blocks))
	case storeJob:
		s.landStores(w, j.blocks, d.At)
	case chainJob:
		// The landing blocks' slots went cold while they were copied:
		// load them together rather than one miss after another.
		s.lower(j.tier).warmSlots(j.blocks)
		for _, b := range j.blocks {
			s.lower(j.tier).land(b.dst)
			w.g2.unpin(b.src)
		}
		s.stats.Tiers[j.tier-2].Offloaded += int64(len(j.blocks))
	case stageJob:
		for i, b := range j.blocks {
			s.lower(j.tier).unpin(b.src)
			w.g2.pin(b.dst) // read by the G2→G1 leg next
			w.g2.land(b.dst)
			j.blocks[i].src = b.dst
		}
		w.publish(j.blocks)
		s.stats.Tiers[j.tier-2].Onboarded += int64(len(j.blocks))
		w.staging--
		j.kind = onboardJob
		s.start(w.down, G2ToG1, d.At, d.Job) // the same job, its second leg
		s.note(d.At)
		return
	case onboardJob:
		for _, b := range j.blocks {
			w.g2.unpin(b.src)
		}
		s.stats.Tiers[0].Onboarded += int64(len(j.blocks))
		r := &s.jobs[j.parent]
		if r.pending--; r.pending == 0 {
			w.ready = append(w.ready, r.id)
			w.onboarding--
			s.freeJob(j.parent)
		}
	}
	s.freeJob(d.Job)
	s.note(d.At)
}

// lower is the pool of tier 3 (G3) or 4 (G4).
func (s *System) lower(tier uint8) *pool {
	if tier == 4 {
		return s.g4
	}
	return s.g3
}

// chain copies blocks that landed in G2 onward to G3 and G4 (write-through),
// unless the tier already has them.
func (s *System) chain(w *Worker, blocks []blk, at float64) {
	for i, dst := range []*pool{s.g3, s.g4} {
		if dst == nil {
			continue
		}
		dst.warmBatch(blocks) // the batch's misses in flight at once
		j := int32(-1)
		for _, b := range blocks {
			slot, added := dst.insert(b.hash)
			if !added {
				continue // already there (or no room)
			}
			if j < 0 {
				j = s.newJob(chainJob, w.index)
				s.jobs[j].tier = uint8(3 + i)
			}
			w.g2.pin(b.dst)
			s.jobs[j].blocks = append(s.jobs[j].blocks, blk{hash: b.hash, src: b.dst, dst: slot})
		}
		if j >= 0 {
			s.start(s.shared[2*i], G2ToG3+LinkKind(2*i), at, j)
		}
	}
}

// publish announces blocks that landed in G2 (one Stored event, tier
// host_pinned).
func (w *Worker) publish(blocks []blk) {
	if w.events == nil {
		return
	}
	h := w.sys.hashes[:0]
	for _, b := range blocks {
		h = append(h, b.hash)
	}
	w.sys.hashes = h
	w.events.StoredIn(kv.HostPinned, h)
}
