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
type EventLog struct {
	DPRank int
	next   uint64
	Events []Event
}

func (l *EventLog) add(kind EventKind) *Event {
	l.Events = append(l.Events, Event{ID: l.next, DPRank: l.DPRank, Kind: kind})
	l.next++
	return &l.Events[len(l.Events)-1]
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
	ev.Blocks = append(ev.Blocks, StoredBlock{BlockHash: seq[i], TokensHash: local})
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
	ev.Removed = append(ev.Removed, hashes...)
	return hashes[:0]
}

// Drain returns the buffered events and empties the buffer.
func (l *EventLog) Drain() []Event {
	ev := l.Events
	l.Events = nil
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
		ev.Blocks = append(ev.Blocks, StoredBlock{BlockHash: h})
	}
}

// RemovedIn publishes hashes as removed from a lower tier.
func (l *EventLog) RemovedIn(tier Tier, hashes []uint64) {
	if len(hashes) == 0 {
		return
	}
	ev := l.add(Removed)
	ev.Tier = tier
	ev.Removed = append(ev.Removed, hashes...)
}
