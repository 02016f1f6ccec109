// Package fpm publishes the forward-pass metrics (FPM) of live-mode engine
// ranks the way Dynamo's InstrumentedScheduler does
// (components/src/dynamo/vllm/instrumented_scheduler.py, schema in
// components/src/dynamo/common/forward_pass_metrics.py): one ZMQ PUB
// socket per data-parallel rank, one message per forward pass that
// scheduled work, and an all-zero heartbeat each second a rank publishes
// nothing.
//
// Each message is three frames: an empty topic, the socket's sequence
// number as 8 big-endian bytes, and a msgpack map (msgspec's default
// Struct encoding) with the upstream field names:
//
//	{"version":1, "worker_id":"<w>", "dp_rank":r, "counter_id":seq,
//	 "wall_time":secs,
//	 "scheduled_requests":{"num_prefill_requests", "sum_prefill_tokens",
//	   "var_prefill_length", "sum_prefill_kv_tokens", "num_decode_requests",
//	   "sum_decode_kv_tokens", "var_decode_kv_tokens"},
//	 "queued_requests":{"num_prefill_requests", "sum_prefill_tokens",
//	   "var_prefill_length", "num_decode_requests", "sum_decode_kv_tokens",
//	   "var_decode_kv_tokens"}}
//
// counter_id equals the sequence frame, as upstream stamps it: it counts
// from 0 per socket, heartbeats included, so a gap is a lost message.
// Sockets bind through the KV-event PUB's peer guard
// (kvevents.ListenGuardedPub). docs/live.md.
package fpm

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dynosim/dynosim-web/cmd/dynosim/live/kvevents"
	"github.com/dynosim/dynosim-web/core/engine"
	"github.com/go-zeromq/zmq4"
	"github.com/vmihailenco/msgpack/v5"
)

const (
	// Version is the schema version upstream's FPM_VERSION names.
	Version = 1
	// DefaultPort is upstream's DEFAULT_FPM_PORT: rank i of a server
	// publishes on DefaultPort+i when the base is not given.
	DefaultPort = 20380
	// HeartbeatInterval is upstream's _FpmPublisherThread.HEARTBEAT_INTERVAL:
	// a rank that published nothing for this long sends a heartbeat.
	HeartbeatInterval = time.Second
	// queueLen bounds the messages a socket's sender has not sent yet;
	// past it a message is dropped (Dropped), as upstream's queue.Full,
	// rather than stall the simulation.
	queueLen = 1024
)

// Scheduled is upstream's ScheduledRequestMetrics: the requests a pass
// computed.
type Scheduled struct {
	NumPrefillRequests int     `msgpack:"num_prefill_requests"`
	SumPrefillTokens   int     `msgpack:"sum_prefill_tokens"`
	VarPrefillLength   float64 `msgpack:"var_prefill_length"`
	SumPrefillKVTokens int     `msgpack:"sum_prefill_kv_tokens"`
	NumDecodeRequests  int     `msgpack:"num_decode_requests"`
	SumDecodeKVTokens  int     `msgpack:"sum_decode_kv_tokens"`
	VarDecodeKVTokens  float64 `msgpack:"var_decode_kv_tokens"`
}

// Queued is upstream's QueuedRequestMetrics: the requests waiting after
// the pass.
type Queued struct {
	NumPrefillRequests int     `msgpack:"num_prefill_requests"`
	SumPrefillTokens   int     `msgpack:"sum_prefill_tokens"`
	VarPrefillLength   float64 `msgpack:"var_prefill_length"`
	NumDecodeRequests  int     `msgpack:"num_decode_requests"`
	SumDecodeKVTokens  int     `msgpack:"sum_decode_kv_tokens"`
	VarDecodeKVTokens  float64 `msgpack:"var_decode_kv_tokens"`
}

// Message is upstream's ForwardPassMetrics, fields in its order.
type Message struct {
	Version           int       `msgpack:"version"`
	WorkerID          string    `msgpack:"worker_id"`
	DPRank            int       `msgpack:"dp_rank"`
	CounterID         uint64    `msgpack:"counter_id"`
	WallTime          float64   `msgpack:"wall_time"`
	ScheduledRequests Scheduled `msgpack:"scheduled_requests"`
	QueuedRequests    Queued    `msgpack:"queued_requests"`
}

// FromEngine is the message of a pass whose snapshot is f. The engine
// counts no variance of queued lengths (spec §1.6 keeps only counts and
// sums for the queue), so var_prefill_length and var_decode_kv_tokens of
// queued_requests are 0.
func FromEngine(f engine.FPM) Message {
	return Message{Version: Version, WallTime: f.WallTimeSecs(),
		ScheduledRequests: Scheduled{
			NumPrefillRequests: f.PrefillRequests, SumPrefillTokens: f.PrefillTokens,
			VarPrefillLength: f.VarPrefillLength, SumPrefillKVTokens: f.PrefillKVTokens,
			NumDecodeRequests: f.DecodeRequests, SumDecodeKVTokens: f.DecodeKVTokens,
			VarDecodeKVTokens: f.VarDecodeKVTokens,
		},
		QueuedRequests: Queued{
			NumPrefillRequests: f.QueuedPrefill, SumPrefillTokens: f.QueuedPrefillTokens,
			NumDecodeRequests: f.QueuedDecode, SumDecodeKVTokens: f.QueuedDecodeKVTokens,
		},
	}
}

// Encode is m's msgpack payload: a map per struct, integers in their
// smallest form, as msgspec writes them.
func Encode(m *Message) ([]byte, error) {
	var b bytes.Buffer
	enc := msgpack.NewEncoder(&b)
	enc.UseCompactInts(true)
	if err := enc.Encode(m); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Rank names the engine rank one socket publishes for.
type Rank struct {
	WorkerID string
	DPRank   int
}

// Publisher is one PUB socket per rank. Pass and Heartbeats are called
// from one goroutine (the live driver's); each socket's sends run in a
// goroutine of their own, because a zmq4 send can block.
type Publisher struct {
	socks   []*sock
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	next    time.Time // the earliest heartbeat due
	dropped atomic.Uint64
}

type sock struct {
	pub  zmq4.Socket
	id   Rank
	last time.Time // when a message was last queued
	out  chan Message
}

// Listen binds a PUB socket at eps[i] for ranks[i] (tcp:// or ipc://,
// through the peer guard) and starts its sender; now starts the
// heartbeat clocks. On an error nothing stays bound.
func Listen(eps []string, ranks []Rank, now time.Time) (*Publisher, error) {
	if len(eps) != len(ranks) {
		return nil, fmt.Errorf("fpm: %d endpoints for %d ranks", len(eps), len(ranks))
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Publisher{cancel: cancel, next: now.Add(HeartbeatInterval)}
	for i, ep := range eps {
		s := &sock{pub: zmq4.NewPub(ctx), id: ranks[i], last: now, out: make(chan Message, queueLen)}
		if err := kvevents.ListenGuardedPub(s.pub, ep); err != nil {
			s.pub.Close()
			return nil, errors.Join(fmt.Errorf("fpm: bind %q (worker %s, DP rank %d): %w", ep, s.id.WorkerID, s.id.DPRank, err), p.Close())
		}
		p.socks = append(p.socks, s)
	}
	for _, s := range p.socks {
		p.wg.Add(1)
		go p.send(ctx, s)
	}
	return p, nil
}

// Addrs are the bound endpoints, rank by rank.
func (p *Publisher) Addrs() []string {
	out := make([]string, len(p.socks))
	for i, s := range p.socks {
		out[i] = kvevents.Endpoint(s.pub)
	}
	return out
}

// Dropped counts messages dropped: their sender's queue was full or the
// send failed.
func (p *Publisher) Dropped() uint64 { return p.dropped.Load() }

// Pass queues the message of a pass of rank i (its index in Listen's
// ranks) that ended at now.
func (p *Publisher) Pass(i int, now time.Time, m Message) {
	s := p.socks[i]
	m.Version, m.WorkerID, m.DPRank = Version, s.id.WorkerID, s.id.DPRank
	p.queue(s, now, m)
}

func (p *Publisher) queue(s *sock, now time.Time, m Message) {
	s.last = now
	select {
	case s.out <- m:
	default:
		p.dropped.Add(1)
	}
}

// Heartbeats queues a heartbeat (wall_time 0, every count 0) for each rank
// that queued nothing for HeartbeatInterval, and returns when the next one
// is due: the caller wakes then (the live driver caps its timer with it).
func (p *Publisher) Heartbeats(now time.Time) time.Time {
	if now.Before(p.next) {
		return p.next
	}
	next := now.Add(HeartbeatInterval)
	for _, s := range p.socks {
		due := s.last.Add(HeartbeatInterval)
		if !now.Before(due) {
			p.queue(s, now, Message{Version: Version, WorkerID: s.id.WorkerID, DPRank: s.id.DPRank})
			due = now.Add(HeartbeatInterval)
		}
		if due.Before(next) {
			next = due
		}
	}
	p.next = next
	return next
}

// send stamps, encodes and sends s's messages until ctx ends. The
// sequence number counts sends tried, as upstream's next(self._seq) does.
func (p *Publisher) send(ctx context.Context, s *sock) {
	defer p.wg.Done()
	var seq uint64
	for {
		select {
		case <-ctx.Done():
			return
		case m := <-s.out:
			m.CounterID = seq
			payload, err := Encode(&m)
			if err != nil {
				panic("fpm: msgpack: " + err.Error()) // fixed numeric fields: a bug
			}
			err = s.pub.SendMulti(zmq4.NewMsgFrom([]byte{}, binary.BigEndian.AppendUint64(nil, seq), payload))
			seq++
			if err != nil && ctx.Err() == nil {
				p.dropped.Add(1)
			}
		}
	}
}

// Close stops the senders and closes the sockets.
func (p *Publisher) Close() error {
	p.cancel()
	var err error
	for _, s := range p.socks {
		if e := s.pub.Close(); e != nil && !errors.Is(e, net.ErrClosed) && !errors.Is(e, zmq4.ErrClosedConn) {
			err = errors.Join(err, e)
		}
	}
	p.wg.Wait()
	if err != nil {
		return fmt.Errorf("fpm: close: %w", err)
	}
	return nil
}
