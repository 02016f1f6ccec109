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

// EventLog numbers and buffers the events of one G1 manager. Ids start at 0
// and increase by one per event; the driver drains the buffer after every
// pass.
type EventLog struct {
	DPRank int
	next   uint64
	Events []Event
}

// Add appends a new event of kind and returns it for the caller to fill.
func (l *EventLog) Add(kind EventKind) *Event { return l.add(kind) }

func (l *EventLog) add(kind EventKind) *Event {
	l.Events = append(l.Events, Event{ID: l.next, DPRank: l.DPRank, Kind: kind})
	l.next++
	return &l.Events[len(l.Events)-1]
}

// Drain returns the buffered events and empties the buffer.
func (l *EventLog) Drain() []Event {
	ev := l.Events
	l.Events = nil
	return ev
}
