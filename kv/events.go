package kv

// EventKind tells stored from removed KV events.
type EventKind uint8

const (
	Stored EventKind = iota + 1
	Removed
)

func (k EventKind) String() string {
	switch k {
	case Stored:
		return "stored"
	case Removed:
		return "removed"
	}
	return "unknown"
}

// Tier is the storage tier of an event's blocks (Dynamo's StorageTier):
// the engine's own G1 device memory, or a KVBM lower tier.
type Tier uint8

const (
	Device     Tier = iota // G1
	HostPinned             // G2
	Disk                   // G3
	Object                 // G4
)

func (t Tier) String() string {
	switch t {
	case HostPinned:
		return "host_pinned"
	case Disk:
		return "disk"
	case Object:
		return "object"
	}
	return "device"
}

// MarshalText writes the tier's name.
func (t Tier) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// StoredBlock is one block of a Stored event: its sequence hash and local
// (tokens) hash.
type StoredBlock struct {
	BlockHash  uint64 `json:"block_hash"`
	TokensHash uint64 `json:"tokens_hash"`
}

// Event is a router-visible KV cache event (spec §4.5).
type Event struct {
	ID        uint64        `json:"event_id"`
	DPRank    int           `json:"dp_rank"`
	Kind      EventKind     `json:"-"`
	Tier      Tier          `json:"tier"` // Device unless a lower tier stored or removed the blocks
	Parent    uint64        `json:"parent_hash,omitempty"`
	HasParent bool          `json:"-"`
	Blocks    []StoredBlock `json:"blocks,omitempty"`
	Removed   []uint64      `json:"block_hashes,omitempty"`
}

// EventLog numbers and buffers the events of one G1 manager: a Manager
// (over the native or the lineage pool) or an SGLang PagePool, which are the
// only builders of events. Ids start at 0 and increase by one per event; the
// driver drains the buffer after every pass.
//
// The events, their blocks and their removed hashes are carved from chunks
// (arenas) that the log fills in order and never writes again once a slice
// of them is handed out: a Drain hands out capacity-capped slices, so a
// reader that keeps or appends to them is safe, and a replay makes a few
// allocations per thousand events instead of one or two per event (issue
// 34 item 2: event slices were the KV router replay's largest allocator).
//
// With Transient set, the reader promises to be done with a drained batch by
// the next Drain (the in-process replay: the router applies a pass's events
// before the worker steps again, and keeps none of them). The log then
// writes into two sets of arenas in turn, the one of the batch drained
// before last being free again, and a replay allocates only while the
// arenas grow (issue 34 item 2, R4: fresh arenas were 62 MB a replay of the
// whole Mooncake trace, streamed through the cache). A reader that keeps
// events (the live hub) leaves it unset and gets arenas never written again.
type EventLog struct {
	DPRank    int
	Transient bool // the reader is done with a drained batch by the next Drain
	next      uint64
	Events    []Event
	blocks    []StoredBlock // arena of Stored events' blocks; the open run is its tail
	hashes    []uint64      // arena of Removed events' hashes
	spare     eventArenas   // Transient: the arenas of the batch drained last
}

// eventArenas is one set of a Transient log's arenas, emptied.
type eventArenas struct {
	events []Event
	blocks []StoredBlock
	hashes []uint64
}

// Chunk sizes: events, blocks and hashes per arena allocation (a chunk is
// larger when one run needs it).
const (
	eventChunk = 256
	blockChunk = 4096
	hashChunk  = 4096
)

func (l *EventLog) add(kind EventKind) *Event {
	if len(l.Events) == cap(l.Events) {
		ev := make([]Event, len(l.Events), max(eventChunk, 2*len(l.Events)))
		copy(ev, l.Events)
		l.Events = ev
	}
	l.Events = append(l.Events, Event{ID: l.next, DPRank: l.DPRank, Kind: kind})
	l.next++
	return &l.Events[len(l.Events)-1]
}

// appendBlock appends b to ev.Blocks, which is empty or the tail of the
// blocks arena (no other event is added while a run is open).
func (l *EventLog) appendBlock(ev *Event, b StoredBlock) {
	n := len(ev.Blocks)
	if len(l.blocks) == cap(l.blocks) {
		// The open run moves to a new chunk; the old one keeps what was
		// handed out. A Transient log keeps only its last chunk, so it
		// doubles until one holds a pass's blocks.
		l.blocks = append(make([]StoredBlock, 0, max(blockChunk, 2*(n+1), l.grown(cap(l.blocks)))), ev.Blocks...)
	}
	l.blocks = append(l.blocks, b)
	end := len(l.blocks)
	ev.Blocks = l.blocks[end-n-1 : end : end]
}

// hashRun copies hashes into the hashes arena.
func (l *EventLog) hashRun(hashes []uint64) []uint64 {
	if cap(l.hashes)-len(l.hashes) < len(hashes) {
		l.hashes = make([]uint64, 0, max(hashChunk, len(hashes)+l.grown(cap(l.hashes))))
	}
	start := len(l.hashes)
	l.hashes = append(l.hashes, hashes...)
	return l.hashes[start:len(l.hashes):len(l.hashes)]
}

// stored adds block i of seq, with local hash local, to the open Stored event
// ev or, when ev is nil, to a new one whose parent is block i-1. It returns
// the event for the next block of the run; a caller ends the run (a block
// that is already visible) by passing nil. No other event may be added while
// a run is open.
func (l *EventLog) stored(ev *Event, seq []uint64, i int, local uint64) *Event {
	if ev == nil {
		ev = l.add(Stored)
		if i > 0 {
			ev.Parent, ev.HasParent = seq[i-1], true
		}
	}
	l.appendBlock(ev, StoredBlock{BlockHash: seq[i], TokensHash: local})
	return ev
}

// removed publishes hashes, if there are any, as one Removed event and
// returns the buffer emptied for reuse. With no hashes it does nothing, even
// on a nil log.
func (l *EventLog) removed(hashes []uint64) []uint64 {
	if len(hashes) == 0 {
		return hashes
	}
	ev := l.add(Removed)
	ev.Removed = l.hashRun(hashes)
	return hashes[:0]
}

// grown is the size of a Transient log's next chunk after one of c: twice
// c (zero for a log whose chunks are never reused).
func (l *EventLog) grown(c int) int {
	if l.Transient {
		return 2 * c
	}
	return 0
}

// Drain returns the buffered events and empties the buffer. A Transient log
// then writes into the arenas of the batch drained before, which its reader
// is done with; ev's arenas wait for the next Drain.
func (l *EventLog) Drain() []Event {
	n := len(l.Events)
	if n == 0 {
		return nil
	}
	ev := l.Events[:n:n]
	if !l.Transient {
		l.Events = l.Events[n:] // the chunk's rest, beyond ev's capacity
		return ev
	}
	// The events and the arenas' latest chunks start with this batch
	// (Transient chunks are filled from their start; an open run never
	// spans a Drain), so their starts are the whole of them.
	free := l.spare
	l.spare = eventArenas{l.Events[:0], l.blocks[:0], l.hashes[:0]}
	l.Events, l.blocks, l.hashes = free.events, free.blocks, free.hashes
	return ev
}

// StoredIn publishes hashes as stored in a lower tier: one Stored event
// without parent or token hashes (a lower tier keeps blocks by sequence
// hash only).
func (l *EventLog) StoredIn(tier Tier, hashes []uint64) {
	if len(hashes) == 0 {
		return
	}
	ev := l.add(Stored)
	ev.Tier = tier
	for _, h := range hashes {
		l.appendBlock(ev, StoredBlock{BlockHash: h})
	}
}

// RemovedIn publishes hashes as removed from a lower tier.
func (l *EventLog) RemovedIn(tier Tier, hashes []uint64) {
	if len(hashes) == 0 {
		return
	}
	ev := l.add(Removed)
	ev.Tier = tier
	ev.Removed = l.hashRun(hashes)
}
