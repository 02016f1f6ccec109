package kvevents

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/internal/patience"
	"github.com/dynosim/dynosim-web/kv"
	"github.com/go-zeromq/zmq4"
)

// listen starts h's ZMQ sockets on free loopback ports and returns their
// endpoints.
func listen(t *testing.T, h *Hub, ctx context.Context) (pub, replay string) {
	t.Helper()
	if err := h.ListenZMQ(ctx, "tcp://127.0.0.1:0", "tcp://127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	pub, replay = h.Addrs()
	if !strings.HasPrefix(pub, "tcp://127.0.0.1:") || !strings.HasPrefix(replay, "tcp://127.0.0.1:") {
		t.Fatalf("Addrs() = %q, %q", pub, replay)
	}
	return pub, replay
}

// waitSubscribed waits until the PUB socket knows a subscription to
// prefix: before that, ZMQ drops what it publishes (the slow joiner).
func waitSubscribed(t *testing.T, h *Hub, prefix string) {
	t.Helper()
	h.mu.Lock()
	pub := h.zmq.pub.(zmq4.Topics)
	h.mu.Unlock()
	patience.Until(t, fmt.Sprintf("a subscription to %q reaches the publisher", prefix), func() (bool, string) {
		topics := pub.Topics()
		return slices.Contains(topics, prefix), fmt.Sprintf("topics %q", topics)
	})
}

// replayFrom asks the replay socket for batches from start (with an
// optional topic prefix) and returns the seq and payload frames up to the
// end marker.
func replayFrom(t *testing.T, dealer zmq4.Socket, req ...[]byte) (seqs []uint64, payloads [][]byte) {
	t.Helper()
	if err := dealer.Send(zmq4.NewMsgFrom(req...)); err != nil {
		t.Fatal(err)
	}
	for {
		msg, err := dealer.Recv()
		if err != nil {
			t.Fatalf("replay recv: %v", err)
		}
		f := msg.Frames
		if len(f) != 3 || len(f[0]) != 0 || len(f[1]) != 8 {
			t.Fatalf("replay reply %q: want [\"\", seq, payload]", f)
		}
		if bytes.Equal(f[1], endSeq) {
			if len(f[2]) != 0 {
				t.Errorf("end marker payload %q", f[2])
			}
			return seqs, payloads
		}
		seqs = append(seqs, binary.BigEndian.Uint64(f[1]))
		payloads = append(payloads, f[2])
	}
}

func seqFrame(s uint64) []byte { return binary.BigEndian.AppendUint64(nil, s) }

// passEvents are pass i's events in the ZMQ tests: i%4+1 stored blocks of
// two ranks, and a removal from pass 2 on.
func passEvents(i int) []kv.Event {
	var ev []kv.Event
	for r := range 2 {
		var hashes []uint64
		for j := range i%4 + 1 {
			hashes = append(hashes, uint64(i<<20|r<<10|j))
		}
		ev = append(ev, stored(r, kv.Device, nil, hashes...))
		if i >= 2 {
			ev = append(ev, removed(r, kv.Device, uint64((i-2)<<20|r<<10)))
		}
	}
	return ev
}

// TestZMQSubscriber has a zmq4 SUB miss the first batches (published
// before it connects), receive every later one live and in order, and fill
// the gap by replay; what it got must add up to the hub's counts.
func TestZMQSubscriber(t *testing.T) {
	workers := []int{1, 11, 2} // worker-1's prefix must not match worker-11
	cases := []struct {
		name       string
		positional bool
		prefix     string
	}{
		{"named all workers", false, "kv@"},
		{"positional all workers", true, "kv@"},
		{"named one worker", false, "kv@worker-1@"},
	}
	const early, live = 4, 30
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := patience.Context(t)
			defer cancel()
			h := NewHub(Options{Model: "org/m", BlockSize: 16, Positional: c.positional})
			defer h.Close()
			pubEP, replayEP := listen(t, h, ctx)

			topic := func(w int) string { return "kv@worker-" + strconv.Itoa(w) + "@org/m" }
			var want Counts
			var wantSeqs []uint64
			publish := func(i int) {
				w := workers[i%len(workers)]
				before := h.Counts()
				if i == early+5 {
					h.PublishCleared(w, float64(i), 1)
				}
				h.Publish(w, float64(i), passEvents(i))
				after := h.Counts()
				if !strings.HasPrefix(topic(w), c.prefix) {
					return
				}
				for s := before.Batches; s < after.Batches; s++ {
					wantSeqs = append(wantSeqs, s)
				}
				want.StoredBlocks += after.StoredBlocks - before.StoredBlocks
				want.RemovedBlocks += after.RemovedBlocks - before.RemovedBlocks
				want.Cleared += after.Cleared - before.Cleared
				want.Batches += after.Batches - before.Batches
			}
			for i := range early {
				publish(i)
			}

			sub := zmq4.NewSub(ctx)
			defer sub.Close()
			if err := sub.Dial(pubEP); err != nil {
				t.Fatal(err)
			}
			if err := sub.SetOption(zmq4.OptionSubscribe, c.prefix); err != nil {
				t.Fatal(err)
			}
			waitSubscribed(t, h, c.prefix)
			liveFrom := h.Counts().Batches
			for i := early; i < early+live; i++ {
				publish(i)
			}

			var got Counts
			var seqs []uint64
			decode := func(seq uint64, p []byte) {
				wb, err := decodePayload(p, c.positional)
				if err != nil {
					t.Fatalf("seq %d: %v", seq, err)
				}
				seqs = append(seqs, seq)
				got.add(wb.counts())
			}
			recv := func() (uint64, []byte) {
				msg, err := sub.Recv()
				if err != nil {
					t.Fatalf("after seqs %v: %v", seqs, err)
				}
				f := msg.Frames
				if len(f) != 3 || len(f[1]) != 8 {
					t.Fatalf("PUB message %q: want [topic, seq, payload]", f)
				}
				if !strings.HasPrefix(string(f[0]), c.prefix) || !strings.HasSuffix(string(f[0]), "@org/m") {
					t.Errorf("topic %q for subscription %q", f[0], c.prefix)
				}
				return binary.BigEndian.Uint64(f[1]), f[2]
			}
			// A consumer's recipe: note the first live batch, replay the
			// ones before it, then read on. Early batches may arrive live
			// too, since the PUB sender runs behind Publish, but nothing
			// published after the subscription may need replay.
			first, payload := recv()
			if i := slices.IndexFunc(wantSeqs, func(s uint64) bool { return s >= liveFrom }); first > wantSeqs[i] {
				t.Fatalf("first live seq %d, but %d was published after the subscription", first, wantSeqs[i])
			}
			dealer := zmq4.NewDealer(ctx)
			defer dealer.Close()
			if err := dealer.Dial(replayEP); err != nil {
				t.Fatal(err)
			}
			rs, rp := replayFrom(t, dealer, nil, seqFrame(0), []byte(c.prefix))
			for i, s := range rs {
				if s < first {
					decode(s, rp[i])
				}
			}
			decode(first, payload)
			for len(seqs) < len(wantSeqs) {
				decode(recv())
			}
			if !slices.Equal(seqs, wantSeqs) {
				t.Fatalf("seqs %v, want %v (live from %d)", seqs, wantSeqs, liveFrom)
			}
			if got != want {
				t.Errorf("received %+v, published %+v", got, want)
			}
			if c.prefix == "kv@" && got != h.Counts() {
				t.Errorf("received %+v, hub counts %+v", got, h.Counts())
			}
		})
	}
}

// TestZMQReplay checks the ROUTER replay protocol against the ring.
func TestZMQReplay(t *testing.T) {
	ctx, cancel := patience.Context(t)
	defer cancel()
	h := NewHub(Options{Model: "m", BlockSize: 16, Retain: 6})
	defer h.Close()
	for i := range 10 {
		h.Publish(i%2, float64(i), []kv.Event{removed(0, kv.Device, uint64(i))})
	}
	_, replayEP := listen(t, h, ctx)
	dealer := zmq4.NewDealer(ctx)
	defer dealer.Close()
	if err := dealer.Dial(replayEP); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		req  [][]byte
		want []uint64
	}{
		{"middle", [][]byte{nil, seqFrame(6)}, []uint64{6, 7, 8, 9}},
		{"before the ring", [][]byte{nil, seqFrame(0)}, []uint64{4, 5, 6, 7, 8, 9}},
		{"last", [][]byte{nil, seqFrame(9)}, []uint64{9}},
		{"future", [][]byte{nil, seqFrame(10)}, nil},
		{"end marker value", [][]byte{nil, endSeq}, nil},
		{"single frame", [][]byte{seqFrame(7)}, []uint64{7, 8, 9}},
		{"topic prefix", [][]byte{nil, seqFrame(5), []byte("kv@worker-1@")}, []uint64{5, 7, 9}},
		{"after a malformed request", nil, []uint64{8, 9}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := c.req
			if req == nil {
				// The server ignores the bad request and answers the next.
				if err := dealer.Send(zmq4.NewMsgFrom(nil, []byte("short"))); err != nil {
					t.Fatal(err)
				}
				req = [][]byte{nil, seqFrame(8)}
			}
			seqs, payloads := replayFrom(t, dealer, req...)
			if !slices.Equal(seqs, c.want) {
				t.Fatalf("replayed %v, want %v", seqs, c.want)
			}
			ring := h.retained(0)
			for i, s := range seqs {
				if !bytes.Equal(payloads[i], ring[s-ring[0].seq].msgpack) {
					t.Errorf("seq %d payload differs from the published one", s)
				}
			}
		})
	}
}

// TestZMQBindErrors checks that bind errors are returned, release what was
// bound, and leave the hub able to listen again.
func TestZMQBindErrors(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	taken := "tcp://" + busy.Addr().String()
	cases := []struct {
		name, pub, replay string
	}{
		{"empty PUB", "", ""},
		{"PUB port taken", taken, ""},
		{"unknown transport", "bogus://127.0.0.1:1", ""},
		{"no transport", "127.0.0.1:1", ""},
		{"replay port taken", "tcp://127.0.0.1:0", taken},
	}
	h := NewHub(Options{})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := h.ListenZMQ(t.Context(), c.pub, c.replay); err == nil {
				t.Fatal("ListenZMQ succeeded")
			} else if !strings.HasPrefix(err.Error(), "kvevents: ") {
				t.Errorf("error %q lacks context", err)
			}
			if p, r := h.Addrs(); p != "" || r != "" {
				t.Errorf("Addrs() = %q, %q after a failed bind", p, r)
			}
		})
	}
	ctx, cancel := context.WithCancel(t.Context())
	listen(t, h, ctx)
	if err := h.ListenZMQ(ctx, "tcp://127.0.0.1:0", ""); err == nil {
		t.Error("a second ListenZMQ succeeded")
	}
	// Ending ctx stops the sockets but not the hub: it may listen again.
	cancel()
	patience.Until(t, "the sockets close after ctx ended", func() (bool, string) {
		p, r := h.Addrs()
		return p == "", fmt.Sprintf("PUB %q, replay %q", p, r)
	})
	waitNoHubGoroutines(t)
	patience.Until(t, "ListenZMQ succeeds after ctx ended", func() (bool, string) {
		err := h.ListenZMQ(t.Context(), "tcp://127.0.0.1:0", "")
		return err == nil, fmt.Sprint(err)
	})
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	waitNoHubGoroutines(t)
	if err := h.ListenZMQ(t.Context(), "tcp://127.0.0.1:0", ""); !errors.Is(err, ErrClosed) {
		t.Errorf("ListenZMQ after Close: %v, want ErrClosed", err)
	}
}

// TestCloseStopsEverything closes a hub with ZMQ consumers and an SSE
// client attached: Close returns cleanly, the stream ends and no hub
// goroutine is left. (zmq4 itself keeps one goroutine per closed PUB
// socket, its pubMWriter, which its Close never stops.)
func TestCloseStopsEverything(t *testing.T) {
	ctx, cancel := patience.Context(t)
	defer cancel()
	h := NewHub(Options{Model: "m"})
	pubEP, replayEP := listen(t, h, ctx)
	sub := zmq4.NewSub(ctx)
	defer sub.Close()
	if err := sub.Dial(pubEP); err != nil {
		t.Fatal(err)
	}
	if err := sub.SetOption(zmq4.OptionSubscribe, ""); err != nil {
		t.Fatal(err)
	}
	dealer := zmq4.NewDealer(ctx)
	defer dealer.Close()
	if err := dealer.Dial(replayEP); err != nil {
		t.Fatal(err)
	}
	srv, returned := sseServer(t, h)
	_, events := get(t, ctx, srv.URL, nil)
	waitSubscribed(t, h, "")
	for i := range 100 {
		h.Publish(i%3, float64(i), passEvents(i))
	}
	if msg, err := sub.Recv(); err != nil || len(msg.Frames) != 3 {
		t.Fatalf("first PUB message %v, %v", msg.Frames, err)
	}
	if seqs, _ := replayFrom(t, dealer, nil, seqFrame(0)); len(seqs) != 200 {
		t.Fatalf("replayed %d batches, want 200", len(seqs))
	}
	if err := h.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case <-returned:
	case <-patience.After(t):
		t.Fatal("ServeHTTP did not return after Close")
	}
	for range events {
	}
	waitNoHubGoroutines(t)
	if p, r := h.Addrs(); p != "" || r != "" {
		t.Errorf("Addrs() = %q, %q after Close", p, r)
	}
}

// Closing a connection its peer already closed is not a close failure.
func TestQuietClose(t *testing.T) {
	twice := &net.OpError{Op: "close", Net: "tcp", Err: net.ErrClosed}
	for _, tc := range []struct {
		err  error
		want bool // kept
	}{
		{nil, false},
		{twice, false},
		{zmq4.ErrClosedConn, false},
		{errors.New("disk on fire"), true},
	} {
		if got := quiet(tc.err) != nil; got != tc.want {
			t.Errorf("quiet(%v) kept = %v, want %v", tc.err, got, tc.want)
		}
	}
}
