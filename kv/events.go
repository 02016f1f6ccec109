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
