package kvevents

import (
	"context"
	"encoding/binary"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dynosim/dynosim-web/kv"
	"github.com/prometheus/client_golang/prometheus"
)

// Defaults and buffer sizes. A subscriber or the ZMQ sender that falls this
// many batches behind is dropped or skips batches rather than stall the
// driver, which runs the simulation on the wall clock.
const (
	defaultRetain = 1024
	subBuffer     = 256  // batches an SSE subscriber may lag
	zmqBuffer     = 4096 // batches queued for the ZMQ PUB sender
	keepalive     = 15 * time.Second
	writeTimeout  = 10 * time.Second // an SSE write slower than this drops the client
	maxScratch    = 1 << 20          // keep the encoding buffer unless a huge batch grew it past this
)

// ErrClosed is returned by ListenZMQ on a closed Hub.
var ErrClosed = errors.New("kvevents: hub closed")

// Options configures a Hub.
type Options struct {
	Model      string // served model name, used in the topic
	BlockSize  int    // tokens per block, for BlockStored.block_size
	Retain     int    // batches kept for replay (0: 1024)
	Positional bool   // encode events as positional msgpack arrays (older consumers) instead of named maps (default)
	// Tokens gives a block's token ids by sequence hash, for BlockStored's
	// token_ids (nil: always empty). Publish calls it, on its caller's
	// goroutine.
	Tokens func(hash uint64) []uint32
}

// Counts are the totals published so far.
type Counts struct {
	StoredBlocks  uint64 // blocks in BlockStored events
	RemovedBlocks uint64 // blocks in BlockRemoved events
	Cleared       uint64 // AllBlocksCleared events
	Batches       uint64 // batches, one per worker pass and DP rank
	DroppedZMQ    uint64 // batches the PUB socket never sent because its queue was full or the send failed
	DroppedSSE    uint64 // SSE subscribers disconnected for falling behind
}

// batch is one published batch. Its bytes are encoded once, in Publish,
// and shared read-only by every transport and the replay ring.
type batch struct {
	seq     uint64
	topic   []byte // shared by all batches of a worker
	seqBE   []byte // seq as 8 big-endian bytes, the PUB and replay frame
	msgpack []byte // the ZMQ payload
	sse     []byte // the complete SSE frame
}

// subscriber is one SSE client. Publish closes ch when the client falls
// more than subBuffer batches behind, or when the hub closes.
type subscriber struct{ ch chan *batch }

// Hub numbers, retains and serves KV event batches. Its methods are safe for
// concurrent use, but Publish is meant for the single driver goroutine.
type Hub struct {
	enc    encoder
	model  string
	retain int
	ctx    context.Context // done when the hub closes
	cancel context.CancelFunc
	wg     sync.WaitGroup // the ZMQ goroutines

	// keepalive is the SSE comment interval, a field so tests need not wait.
	keepalive time.Duration

	pubMu   sync.Mutex // serializes Publish; guards the fields below
	seq     uint64     // next batch's sequence number
	scratch []byte
	ranks   []int
	topics  map[int][]byte

	mu      sync.Mutex // guards the fields below
	ring    []*batch   // the last retain batches, oldest at head once full
	head    int
	subs    map[*subscriber]struct{}
	closed  bool
	zmq     *zmqServer // nil unless ListenZMQ is serving
	zmqBusy bool       // ListenZMQ is binding or serving
	zmqErr  error      // from closing the ZMQ sockets

	stored, removed, cleared, batches, droppedZMQ, droppedSSE atomic.Uint64
}

// NewHub returns a Hub with options o.
func NewHub(o Options) *Hub {
	retain := o.Retain
	if retain <= 0 {
		retain = defaultRetain
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Hub{
		enc:       encoder{blockSize: o.BlockSize, positional: o.Positional, tokens: o.Tokens},
		model:     o.Model,
		retain:    retain,
		ctx:       ctx,
		cancel:    cancel,
		keepalive: keepalive,
		topics:    make(map[int][]byte),
		subs:      make(map[*subscriber]struct{}),
	}
}

// Publish records one pass's events of worker w (a global worker index),
// grouped into one batch per DP rank in order of first appearance, at ts
// seconds of simulated time. It encodes the events before it returns, so the
// caller may reuse the slices, and never blocks on a consumer. Events of an
// unknown kind are skipped; no events, no batch.
func (h *Hub) Publish(w int, ts float64, events []kv.Event) {
	if len(events) == 0 {
		return
	}
	h.pubMu.Lock()
	defer h.pubMu.Unlock()
	ranks := h.ranks[:0]
	for i := range events {
		if !encodable(&events[i]) || contains(ranks, events[i].DPRank) {
			continue
		}
		ranks = append(ranks, events[i].DPRank)
	}
	for _, r := range ranks {
		h.emit(w, ts, r, false, events)
	}
	h.ranks = ranks[:0]
}

// PublishCleared records an AllBlocksCleared event of worker w's DP rank,
// for a cache reset or a restarted worker: kv.Event has no kind for it.
func (h *Hub) PublishCleared(w int, ts float64, dpRank int) {
	h.pubMu.Lock()
	defer h.pubMu.Unlock()
	h.emit(w, ts, dpRank, true, nil)
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// emit encodes, retains and fans out one batch; h.pubMu is held.
func (h *Hub) emit(w int, ts float64, rank int, cleared bool, events []kv.Event) {
	if h.ctx.Err() != nil {
		return
	}
	seq := h.seq
	// One allocation per batch: seq frame, payload and SSE frame share it.
	buf := binary.BigEndian.AppendUint64(h.scratch[:0], seq)
	buf = h.enc.appendMsgpack(buf, ts, rank, cleared, events)
	mpEnd := len(buf)
	buf = h.enc.appendSSE(buf, seq, ts, w, rank, cleared, events)
	if cap(buf) <= maxScratch {
		h.scratch = buf // reused: the next batch encodes without growing
	}
	data := make([]byte, len(buf))
	copy(data, buf)
	b := &batch{seq: seq, topic: h.topic(w), seqBE: data[:8:8], msgpack: data[8:mpEnd:mpEnd], sse: data[mpEnd:]}

	var stored, removed uint64
	for i := range events {
		if ev := &events[i]; ev.DPRank == rank {
			switch ev.Kind {
			case kv.Stored:
				stored += uint64(len(ev.Blocks))
			case kv.Removed:
				removed += uint64(len(ev.Removed))
			}
		}
	}

	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.seq++
	h.push(b)
	for s := range h.subs {
		select {
		case s.ch <- b:
		default:
			// A lagging client reconnects with Last-Event-ID and catches up
			// from the ring; waiting for it would stall the simulation.
			delete(h.subs, s)
			close(s.ch)
			h.droppedSSE.Add(1)
		}
	}
	z := h.zmq
	h.stored.Add(stored)
	h.removed.Add(removed)
	if cleared {
		h.cleared.Add(1)
	}
	h.batches.Add(1)
	h.mu.Unlock()

	if z != nil {
		select {
		case z.out <- b:
		default:
			h.droppedZMQ.Add(1)
		}
	}
}

// topic returns worker w's PUB topic; h.pubMu is held.
func (h *Hub) topic(w int) []byte {
	t, ok := h.topics[w]
	if !ok {
		t = []byte("kv@worker-" + strconv.Itoa(w) + "@" + h.model)
		h.topics[w] = t
	}
	return t
}

// push adds b to the ring, evicting the oldest batch once it is full; h.mu
// is held.
func (h *Hub) push(b *batch) {
	if len(h.ring) < h.retain {
		h.ring = append(h.ring, b)
		return
	}
	h.ring[h.head] = b
	h.head = (h.head + 1) % len(h.ring)
}

// since returns the retained batches with seq >= from, oldest first; h.mu is
// held. Sequence numbers in the ring are consecutive, so it indexes.
func (h *Hub) since(from uint64) []*batch {
	n := len(h.ring)
	if n == 0 {
		return nil
	}
	oldest := h.ring[h.head].seq
	skip := 0
	if from > oldest {
		if from-oldest >= uint64(n) {
			return nil
		}
		skip = int(from - oldest)
	}
	out := make([]*batch, 0, n-skip)
	for i := skip; i < n; i++ {
		out = append(out, h.ring[(h.head+i)%n])
	}
	return out
}

// retained returns, under h.mu, the retained batches with seq >= from.
func (h *Hub) retained(from uint64) []*batch {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.since(from)
}

// subscribe registers an SSE subscriber and returns it with the retained
// batches with seq >= from, atomically so that no batch is missed or sent
// twice. It returns nil once the hub is closed.
func (h *Hub) subscribe(from uint64) ([]*batch, *subscriber) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, nil
	}
	s := &subscriber{ch: make(chan *batch, subBuffer)}
	h.subs[s] = struct{}{}
	return h.since(from), s
}

// unsubscribe removes s unless Publish or Close already has.
func (h *Hub) unsubscribe(s *subscriber) {
	h.mu.Lock()
	delete(h.subs, s)
	h.mu.Unlock()
}

// Counts returns the totals published so far.
func (h *Hub) Counts() Counts {
	return Counts{
		StoredBlocks:  h.stored.Load(),
		RemovedBlocks: h.removed.Load(),
		Cleared:       h.cleared.Load(),
		Batches:       h.batches.Load(),
		DroppedZMQ:    h.droppedZMQ.Load(),
		DroppedSSE:    h.droppedSSE.Load(),
	}
}

// Collectors returns Prometheus counters of Counts, read at scrape time:
// dynosim_kv_events_{blocks_stored,blocks_removed,cleared,batches}_total and
// dynosim_kv_events_dropped_total{transport="zmq"|"sse"}.
func (h *Hub) Collectors() []prometheus.Collector {
	counter := func(name, help string, labels prometheus.Labels, v *atomic.Uint64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{
			Namespace: "dynosim", Subsystem: "kv_events", Name: name, Help: help, ConstLabels: labels,
		}, func() float64 { return float64(v.Load()) })
	}
	const dropHelp = "KV event batches a transport dropped: zmq counts batches, sse counts disconnected lagging subscribers."
	return []prometheus.Collector{
		counter("blocks_stored_total", "KV blocks published in BlockStored events.", nil, &h.stored),
		counter("blocks_removed_total", "KV blocks published in BlockRemoved events.", nil, &h.removed),
		counter("cleared_total", "AllBlocksCleared events published.", nil, &h.cleared),
		counter("batches_total", "KV event batches published.", nil, &h.batches),
		counter("dropped_total", dropHelp, prometheus.Labels{"transport": "zmq"}, &h.droppedZMQ),
		counter("dropped_total", dropHelp, prometheus.Labels{"transport": "sse"}, &h.droppedSSE),
	}
}

// Close stops the ZMQ sockets and ends every SSE stream; later batches are
// discarded. It waits for the hub's ZMQ goroutines and returns the error of
// closing the sockets, if any. Closing twice is a no-op.
func (h *Hub) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	for s := range h.subs {
		delete(h.subs, s)
		close(s.ch)
	}
	h.mu.Unlock()
	h.cancel()
	h.wg.Wait()
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.zmqErr
}
