package kvevents

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/dynosim/dynosim-web/internal/patience"
	"github.com/dynosim/dynosim-web/kv"
	"github.com/go-zeromq/zmq4"
)

// The hub-level tests of issue 29 item 2: hostile or silent peers on the
// PUB and replay ports, spoken to over raw TCP in ZMTP 3.0
// (https://rfc.zeromq.org/spec/23/).

// zmtpGreeting is a client's 64-byte ZMTP 3.0 greeting with the NULL
// mechanism, as zmq4 and libzmq send it.
func zmtpGreeting() []byte {
	g := make([]byte, 64)
	g[0], g[9] = 0xff, 0x7f // signature
	g[10], g[11] = 3, 0     // version 3.0
	copy(g[12:32], "NULL")  // mechanism; as-server byte 32 stays 0
	return g
}

// zmtpFrame is one ZMTP frame with the given flags (more 0x01, command
// 0x04); the size takes the long form when it needs it or when long is set.
func zmtpFrame(flags byte, body []byte, long bool) []byte {
	if long || len(body) > 255 {
		return append(binary.BigEndian.AppendUint64([]byte{flags | 0x02}, uint64(len(body))), body...)
	}
	return append([]byte{flags, byte(len(body))}, body...)
}

// zmtpReady is the NULL mechanism's READY command naming the socket type.
func zmtpReady(socketType string) []byte {
	body := []byte("\x05READY\x0bSocket-Type")
	body = binary.BigEndian.AppendUint32(body, uint32(len(socketType)))
	body = append(body, socketType...)
	return zmtpFrame(0x04, body, false)
}

// claim is a frame header (flags plus the long size form) claiming size
// bytes, with no body behind it.
func claim(flags byte, size uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{flags | 0x02}, size)
}

func cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

var checkServesWorker atomic.Int64

// rawDial opens a plain TCP connection to a "tcp://host:port" endpoint.
func rawDial(t *testing.T, ep string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(ep, "tcp://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// serverCloses reads what the server sends until it closes the
// connection; a read still blocked at the patience limit fails t.
func serverCloses(t *testing.T, c net.Conn, what string) {
	t.Helper()
	if limit, ok := patience.Limit(t); ok {
		if err := c.SetReadDeadline(limit); err != nil {
			t.Fatal(err)
		}
	}
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("%s: the server kept the connection open", what)
	}
}

// dialWithin dials s to ep, failing t if the dial (which includes the ZMTP
// handshake, that zmq4 gives no deadline) has not returned at the
// patience limit: a blocked accept loop shows as that.
func dialWithin(t *testing.T, s zmq4.Socket, ep string) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- s.Dial(ep) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-patience.After(t):
		t.Fatalf("dial %s: the handshake never completed", ep)
	}
}

// checkServes checks that h still serves a new subscriber and a replay
// request: a fresh SUB receives a batch published after it subscribed,
// and a fresh DEALER gets that batch replayed.
func checkServes(t *testing.T, h *Hub, pubEP, replayEP string) {
	t.Helper()
	ctx, cancel := patience.Context(t)
	defer cancel()
	sub := zmq4.NewSub(ctx)
	defer sub.Close()
	dialWithin(t, sub, pubEP)
	// A worker of its own, so that an earlier SUB's subscription, which
	// the PUB may not have dropped yet, does not pass for this one's.
	w := int(checkServesWorker.Add(1))
	prefix := "kv@worker-" + strconv.Itoa(w) + "@"
	if err := sub.SetOption(zmq4.OptionSubscribe, prefix); err != nil {
		t.Fatal(err)
	}
	waitSubscribed(t, h, prefix)
	seq := h.Counts().Batches
	h.Publish(w, 1, []kv.Event{removed(0, kv.Device, 42)})
	msg, err := sub.Recv()
	if err != nil {
		t.Fatalf("subscriber after the attack: %v", err)
	}
	if len(msg.Frames) != 3 || binary.BigEndian.Uint64(msg.Frames[1]) != seq {
		t.Fatalf("subscriber after the attack got %q, want batch %d", msg.Frames, seq)
	}
	dealer := zmq4.NewDealer(ctx)
	defer dealer.Close()
	dialWithin(t, dealer, replayEP)
	if seqs, _ := replayFrom(t, dealer, nil, seqFrame(seq)); len(seqs) != 1 || seqs[0] != seq {
		t.Fatalf("replay after the attack: %v, want [%d]", seqs, seq)
	}
}

// Issue 29 item 2: a ZMTP greeting and then a frame claiming 2^62 bytes
// (73 bytes in all) crashed `dynosim live`, because zmq4 allocates what a
// peer claims. Every such claim on either port must close that connection
// and nothing else: the hub serves the next subscriber and replay request.
func TestZMQHugeFrameClaimIsRefused(t *testing.T) {
	attacks := []struct {
		name string
		// bytes for the PUB port and the replay port
		pub, replay []byte
	}{
		{"command claims 2^62 bytes (the 73-byte crash)",
			cat(zmtpGreeting(), claim(0x04, 1<<62)), cat(zmtpGreeting(), claim(0x04, 1<<62))},
		{"command claims 2^64-1 bytes",
			cat(zmtpGreeting(), claim(0x04, 1<<64-1)), cat(zmtpGreeting(), claim(0x04, 1<<64-1))},
		{"message after the handshake claims 2^62 bytes",
			cat(zmtpGreeting(), zmtpReady("SUB"), claim(0, 1<<62)),
			cat(zmtpGreeting(), zmtpReady("DEALER"), claim(0, 1<<62))},
		{"second frame of a message claims 2^62 bytes",
			cat(zmtpGreeting(), zmtpReady("SUB"), zmtpFrame(0x01, []byte{1}, false), claim(0, 1<<62)),
			cat(zmtpGreeting(), zmtpReady("DEALER"), zmtpFrame(0x01, nil, false), claim(0, 1<<62))},
		{"message claims 1 GiB",
			cat(zmtpGreeting(), zmtpReady("SUB"), claim(0, 1<<30)),
			cat(zmtpGreeting(), zmtpReady("DEALER"), claim(0, 1<<30))},
	}
	h := NewHub(Options{Model: "m", BlockSize: 16})
	defer h.Close()
	ctx, cancel := patience.Context(t)
	defer cancel()
	pubEP, replayEP := listen(t, h, ctx)
	if got := len(cat(zmtpGreeting(), claim(0x04, 1<<62))); got != 73 {
		t.Fatalf("the reported attack is 73 bytes, this one %d", got)
	}
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			for _, port := range []struct {
				name, ep string
				attack   []byte
			}{{"PUB", pubEP, a.pub}, {"replay", replayEP, a.replay}} {
				c := rawDial(t, port.ep)
				if _, err := c.Write(port.attack); err != nil {
					t.Fatal(err)
				}
				serverCloses(t, c, port.name+" port")
			}
			checkServes(t, h, pubEP, replayEP)
		})
	}
}

// Issue 29 item 2: zmq4 accepts connections one at a time and runs each
// ZMTP handshake to its end before the next, with no deadline, so one TCP
// peer that never speaks blocked every later subscriber. Peers that are
// silent, or stop part-way through the handshake, must not keep a real
// SUB or DEALER that connects after them from being served.
func TestZMQSilentPeerDoesNotBlockSubscribers(t *testing.T) {
	stalls := []struct {
		name        string
		pub, replay []byte // what the peer sends before it falls silent
	}{
		{"silent", nil, nil},
		{"one byte", []byte{0xff}, []byte{0xff}},
		{"signature only", zmtpGreeting()[:10], zmtpGreeting()[:10]},
		{"greeting, no READY", zmtpGreeting(), zmtpGreeting()},
		{"half a READY", cat(zmtpGreeting(), zmtpReady("SUB")[:5]), cat(zmtpGreeting(), zmtpReady("DEALER")[:5])},
	}
	h := NewHub(Options{Model: "m", BlockSize: 16})
	defer h.Close()
	ctx, cancel := patience.Context(t)
	defer cancel()
	pubEP, replayEP := listen(t, h, ctx)
	// All stalled peers at once, so the test waits out the handshake
	// deadline (if any applies) once, not once per case.
	for _, s := range stalls {
		for _, port := range []struct {
			ep   string
			sent []byte
		}{{pubEP, s.pub}, {replayEP, s.replay}} {
			c := rawDial(t, port.ep)
			if _, err := c.Write(port.sent); err != nil {
				t.Fatalf("%s: %v", s.name, err)
			}
		}
	}
	checkServes(t, h, pubEP, replayEP)
}

// zmtpHandshake completes a raw ZMTP handshake on c as socketType and
// reads the server's greeting and READY.
func zmtpHandshake(t *testing.T, c net.Conn, socketType string) {
	t.Helper()
	if _, err := c.Write(cat(zmtpGreeting(), zmtpReady(socketType))); err != nil {
		t.Fatal(err)
	}
	var greeting [64]byte
	if _, err := io.ReadFull(c, greeting[:]); err != nil {
		t.Fatalf("server greeting: %v", err)
	}
	var hdr [2]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil || hdr[0] != 0x04 {
		t.Fatalf("server READY header %x: %v", hdr, err)
	}
	if _, err := io.CopyN(io.Discard, c, int64(hdr[1])); err != nil {
		t.Fatalf("server READY: %v", err)
	}
}

// Issue 29 item 2: zmq4's PUB queues whatever a subscriber sends that is
// not a subscription for a Recv that a PUB never makes; after ten such
// messages that connection's reader blocked for good, so it took no more
// subscriptions and its descriptor outlived the peer. Such traffic (and
// commands such as a heartbeat PING) must be dropped and subscriptions
// after it still honoured.
func TestZMQPubDropsNonSubscriptionTraffic(t *testing.T) {
	h := NewHub(Options{Model: "m", BlockSize: 16})
	defer h.Close()
	ctx, cancel := patience.Context(t)
	defer cancel()
	pubEP, _ := listen(t, h, ctx)
	c := rawDial(t, pubEP)
	zmtpHandshake(t, c, "SUB")
	var junk []byte
	for i := range 20 {
		junk = append(junk, zmtpFrame(0, fmt.Appendf(nil, "hello %d", i), false)...)         // not a subscription
		junk = append(junk, zmtpFrame(0x01, []byte{1}, false)...)                            // a two-frame message
		junk = append(junk, zmtpFrame(0, []byte{1, 'x'}, false)...)                          // ... whose last frame looks like one
		junk = append(junk, zmtpFrame(0, nil, false)...)                                     // empty
		junk = append(junk, zmtpFrame(0x04, []byte("\x04PING\x00\x64"), false)...)           // ZMTP 3.1 heartbeat
		junk = append(junk, zmtpFrame(0x04, []byte("\x09SUBSCRIBE"+"kv@nothing"), false)...) // 3.1 command form, unsupported by zmq4
	}
	sub := zmtpFrame(0, []byte("\x01kv@worker-3@"), false)
	if _, err := c.Write(cat(junk, sub)); err != nil {
		t.Fatal(err)
	}
	waitSubscribed(t, h, "kv@worker-3@")
	for _, topic := range h.zmq.pub.(zmq4.Topics).Topics() {
		if topic != "kv@worker-3@" {
			t.Errorf("junk became subscription %q", topic)
		}
	}
	h.Publish(3, 1, []kv.Event{removed(0, kv.Device, 7)})
	want := zmtpFrame(0x01, []byte("kv@worker-3@m"), false)
	got := make([]byte, len(want))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatalf("no batch for the subscription after the junk: %v", err)
	}
	if string(got) != string(want) {
		t.Errorf("first frame %q, want the topic frame %q", got, want)
	}
}

// guardGoroutines returns the stacks of goroutines running the peer
// guard's listener code.
func guardGoroutines() []string {
	var out []string
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "kvevents.(*guardListener).") {
			out = append(out, g)
		}
	}
	return out
}

// Issue 29 item 2: each socket holds at most maxPeerConns connections, so
// peers cannot take every file descriptor of the process; one past the cap
// is closed at once, and a slot comes back when its peer leaves. Closing
// the hub ends the listeners' goroutines.
func TestZMQPeerConnectionsAreCapped(t *testing.T) {
	h := NewHub(Options{Model: "m", BlockSize: 16})
	ctx, cancel := patience.Context(t)
	defer cancel()
	pubEP, replayEP := listen(t, h, ctx)
	for _, ep := range []string{pubEP, replayEP} {
		silent := make([]net.Conn, maxPeerConns)
		for i := range silent {
			silent[i] = rawDial(t, ep)
		}
		serverCloses(t, rawDial(t, ep), "a connection past the cap")
		silent[0].Close()
		// The slot comes back once the server has seen the close; a
		// dial before that is closed at once, as above.
		patience.Until(t, "a slot comes back", func() (bool, string) {
			c := rawDial(t, ep)
			defer c.Close()
			// Both answers come at once: the server's greeting, or EOF
			// at the cap.
			var b [1]byte
			_, err := c.Read(b[:])
			return err == nil, fmt.Sprint(err)
		})
		for _, c := range silent[1:] {
			c.Close()
		}
	}
	checkServes(t, h, pubEP, replayEP)
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	patience.Until(t, "the guard's goroutines end", func() (bool, string) {
		g := guardGoroutines()
		return len(g) == 0, strings.Join(g, "\n\n")
	})
}
