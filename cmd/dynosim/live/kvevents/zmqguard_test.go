package kvevents

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// feedChunks feeds in to a fresh guard of role in pieces of the given size
// (0: all at once) and returns what passed and the error.
func feedChunks(role guardRole, in []byte, chunk int) ([]byte, error) {
	g := frameGuard{role: role}
	if chunk <= 0 {
		chunk = max(len(in), 1)
	}
	var out []byte
	for len(in) > 0 {
		n := min(chunk, len(in))
		var err error
		if out, err = g.feed(in[:n], out); err != nil {
			return out, err
		}
		in = in[n:]
	}
	return out, nil
}

// referenceGuard is the frame guard's rule written as plainly as possible,
// over the whole input at once: what passes and whether the peer is
// refused. The fuzz target holds the incremental guard to it.
func referenceGuard(role guardRole, in []byte) (out []byte, refused bool) {
	for i := range min(len(in), zmtpGreetingLen) {
		if i == 0 && in[i] != 0xff || i == 9 && in[i] != 0x7f || i == 10 && in[i] != 3 {
			return out, true
		}
		out = append(out, in[i])
	}
	if len(in) < zmtpGreetingLen {
		return out, false
	}
	in = in[zmtpGreetingLen:]
	ready := false
	for len(in) > 0 { // one message a turn
		pass := true
		var total uint64
		for frame := 0; ; frame++ {
			if len(in) == 0 {
				return out, false
			}
			flags := in[0]
			cmd, more, long := flags&4 != 0, flags&1 != 0, flags&2 != 0
			if flags&0xf8 != 0 || cmd && more || cmd && frame > 0 || !cmd && !ready {
				return out, true
			}
			hdrLen := 2
			if long {
				hdrLen = 9
			}
			if len(in) < hdrLen {
				return out, false
			}
			size := uint64(in[1])
			if long {
				size = binary.BigEndian.Uint64(in[1:9])
			}
			if size > maxPeerMessage-total || frame == maxPeerFrames {
				return out, true
			}
			total += size
			body := in[hdrLen:]
			if uint64(len(body)) > size {
				body = body[:size]
			}
			if role == rolePub && ready && frame == 0 {
				switch {
				case cmd || more || size == 0:
					pass = false
				case len(body) == 0:
					return out, false // the deciding byte is not in yet
				default:
					pass = body[0] <= 1
				}
			}
			if pass {
				out = append(out, in[:hdrLen+len(body)]...)
			}
			in = in[hdrLen+len(body):]
			if uint64(len(body)) < size {
				return out, false
			}
			if !more {
				break
			}
		}
		ready = true
	}
	return out, false
}

// checkPassedBounds parses what a guard passed as zmq4 will and checks it
// claims nothing over the bounds: what zmq4 allocates for it is bounded.
func checkPassedBounds(t *testing.T, out []byte) {
	t.Helper()
	if len(out) <= zmtpGreetingLen {
		return
	}
	in := out[zmtpGreetingLen:]
	var total uint64
	frames := 0
	for len(in) >= 2 {
		size, hdrLen := uint64(in[1]), 2
		if in[0]&flagLong != 0 {
			if len(in) < 9 {
				t.Fatalf("passed a partial long header % x", in)
			}
			size, hdrLen = binary.BigEndian.Uint64(in[1:9]), 9
		}
		frames++
		total += size
		if size > maxPeerMessage || total > maxPeerMessage || frames > maxPeerFrames {
			t.Fatalf("passed a frame of %d bytes, message %d bytes in %d frames", size, total, frames)
		}
		if in[0]&flagMore == 0 {
			total, frames = 0, 0
		}
		in = in[min(uint64(len(in)), uint64(hdrLen)+size):]
	}
	if len(in) == 1 {
		t.Fatalf("passed a partial header % x", in)
	}
}

// Issue 29 item 2: the guard's rules, case by case, for both sockets and
// whatever the pieces the bytes arrive in.
func TestZMQFrameGuardBounds(t *testing.T) {
	hs := func(socketType string) []byte { return cat(zmtpGreeting(), zmtpReady(socketType)) }
	big := bytes.Repeat([]byte{1}, maxPeerMessage)
	frames := func(n int) []byte {
		var b []byte
		for range n - 1 {
			b = append(b, zmtpFrame(flagMore, nil, false)...)
		}
		return append(b, zmtpFrame(0, []byte{8}, false)...)
	}
	sub := zmtpFrame(0, []byte("\x01kv@"), false)
	unsub := zmtpFrame(0, []byte("\x00kv@"), false)
	cases := []struct {
		name   string
		role   guardRole
		in     []byte
		want   []byte // nil: in itself
		refuse string // error substring, "" for none
	}{
		{"handshake and a replay request", roleReplay, cat(hs("DEALER"), frames(3)), nil, ""},
		{"frame at the bound", roleReplay, cat(hs("DEALER"), zmtpFrame(0, big, false)), nil, ""},
		{"frame over the bound", roleReplay, cat(hs("DEALER"), zmtpFrame(0, append(big, 1), false)),
			hs("DEALER"), "over the 65536-byte bound"},
		{"frames over the bound together", roleReplay,
			cat(hs("DEALER"), zmtpFrame(flagMore, big[:40000], false), zmtpFrame(0, big[:40000], false)),
			cat(hs("DEALER"), zmtpFrame(flagMore, big[:40000], false)), "over the 65536-byte bound"},
		{"frames at the bound", roleReplay, cat(hs("DEALER"), frames(maxPeerFrames)), nil, ""},
		{"frames over the bound", roleReplay, cat(hs("DEALER"), frames(maxPeerFrames+1)),
			cat(hs("DEALER"), frames(maxPeerFrames + 1)[:2*maxPeerFrames]), "over 16 frames"},
		{"command claims 2^62 bytes", roleReplay, cat(zmtpGreeting(), claim(flagCommand, 1<<62)),
			zmtpGreeting(), "claims 4611686018427387904 bytes"},
		{"short size form", roleReplay, cat(hs("DEALER"), zmtpFrame(0, []byte("x"), false)), nil, ""},
		{"long size form for a short frame", roleReplay, cat(hs("DEALER"), zmtpFrame(0, []byte("x"), true)), nil, ""},
		{"reserved flag bits", roleReplay, cat(hs("DEALER"), []byte{0x08, 0}), hs("DEALER"), "reserved bits"},
		{"command with more", roleReplay, cat(zmtpGreeting(), []byte{0x05, 0}), zmtpGreeting(), "command with the more flag"},
		{"command inside a message", roleReplay, cat(hs("DEALER"), zmtpFrame(flagMore, nil, false), zmtpReady("DEALER")),
			cat(hs("DEALER"), zmtpFrame(flagMore, nil, false)), "command inside"},
		{"message before the handshake", roleReplay, cat(zmtpGreeting(), sub), zmtpGreeting(), "before the handshake"},
		{"not ZMTP", roleReplay, []byte("GET / HTTP/1.1\r\n"), []byte{}, "not a ZMTP 3 greeting"},
		{"bad signature end", roleReplay, cat(zmtpGreeting()[:9], []byte{0x7e}), zmtpGreeting()[:9], "byte 9"},
		{"ZMTP 2", roleReplay, cat(zmtpGreeting()[:10], []byte{1}), zmtpGreeting()[:10], "major version 1"},
		{"PUB: subscriptions pass", rolePub, cat(hs("SUB"), sub, unsub, sub), nil, ""},
		{"PUB: everything else is dropped", rolePub,
			cat(hs("SUB"), zmtpFrame(0, []byte("hello"), false), sub, zmtpFrame(flagMore, []byte{1}, false),
				zmtpFrame(0, []byte{1}, false), zmtpFrame(0, nil, false), zmtpFrame(flagCommand, []byte("\x04PING\x00\x10"), false),
				zmtpFrame(0, []byte{2, 'k'}, true), unsub),
			cat(hs("SUB"), sub, unsub), ""},
		{"PUB: bounds hold for dropped messages too", rolePub, cat(hs("SUB"), zmtpFrame(0, append(big, 2), false)),
			hs("SUB"), "over the 65536-byte bound"},
		{"PUB: a half-read subscription is held", rolePub, cat(hs("SUB"), sub[:2]), hs("SUB"), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := c.want
			if want == nil {
				want = c.in
			}
			for _, chunk := range []int{0, 1, 3, 64, 100} {
				out, err := feedChunks(c.role, c.in, chunk)
				switch {
				case c.refuse == "" && err != nil:
					t.Fatalf("chunk %d: refused: %v", chunk, err)
				case c.refuse != "" && (err == nil || !strings.Contains(err.Error(), c.refuse)):
					t.Fatalf("chunk %d: error %v, want one with %q", chunk, err, c.refuse)
				case !bytes.Equal(out, want):
					t.Fatalf("chunk %d: passed\n% x\nwant\n% x", chunk, out, want)
				}
				var ne net.Error
				if err != nil && (!errors.As(err, &ne) || ne.Timeout()) {
					t.Errorf("refusal %v is not a net.Error zmq4 drops the connection for", err)
				}
			}
			if ref, refused := referenceGuard(c.role, c.in); !bytes.Equal(ref, want) || refused != (c.refuse != "") {
				t.Errorf("the reference passes % x (refused %v)", ref, refused)
			}
		})
	}
}

// Issue 29 item 2: the guard, fed arbitrary bytes in arbitrary pieces,
// never panics, agrees with the plain reference rule, passes on exactly
// the bytes it accepts (for the replay socket, a prefix of its input; for
// the PUB, its input less whole messages), and never passes a frame header
// claiming more than the bounds, so what zmq4 allocates stays bounded.
func FuzzZMQFrameGuard(f *testing.F) {
	f.Add([]byte{}, uint8(0), uint8(0), uint8(2))
	f.Add(claim(flagCommand, 1<<62), uint8(0), uint8(0), uint8(1))
	f.Add(claim(0, 1<<62), uint8(1), uint8(3), uint8(2))
	f.Add(cat(zmtpFrame(0, []byte("\x01kv@"), false), zmtpFrame(flagMore, nil, false), zmtpFrame(0, []byte{1, 2}, true)),
		uint8(1), uint8(1), uint8(2))
	f.Add(cat(zmtpGreeting(), zmtpReady("SUB"), zmtpFrame(0, []byte("\x00x"), false)), uint8(1), uint8(7), uint8(0))
	f.Add(cat(zmtpFrame(flagMore, []byte("a"), false), zmtpFrame(0, seqFrame(3), false)), uint8(0), uint8(2), uint8(2))
	f.Fuzz(func(t *testing.T, data []byte, role, chunk, prefix uint8) {
		r := guardRole(role % 2)
		in := data
		switch prefix % 3 { // help the fuzzer past the greeting and handshake
		case 1:
			in = cat(zmtpGreeting(), data)
		case 2:
			in = cat(zmtpGreeting(), zmtpReady("SUB"), data)
		}
		want, wantRefused := referenceGuard(r, in)
		for _, size := range []int{0, 1, int(chunk%16) + 1} {
			g := frameGuard{role: r}
			var out []byte
			var err error
			for rest := in; len(rest) > 0 && err == nil; {
				n := size
				if n == 0 || n > len(rest) {
					n = len(rest)
				}
				before := len(out)
				out, err = g.feed(rest[:n], out)
				if len(out)-before > n+len(g.held) {
					t.Fatalf("fed %d bytes, passed %d", n, len(out)-before)
				}
				rest = rest[n:]
			}
			if !bytes.Equal(out, want) || (err != nil) != wantRefused {
				t.Fatalf("pieces of %d: passed % x (err %v)\nreference % x (refused %v)", size, out, err, want, wantRefused)
			}
		}
		if r == roleReplay && !bytes.HasPrefix(in, want) {
			t.Fatalf("replay guard passed % x, not a prefix of its input", want)
		}
		checkPassedBounds(t, want)
	})
}

// Issue 29 item 2: a subscriber that stops reading must not stall the
// PUB's writes to everyone (zmq4 writes to one subscriber after another):
// a write that stalls past the write timeout fails the connection, with an
// error zmq4 drops it for, and frees its slot. And the greeting the
// listener sent for zmq4 is not sent twice.
func TestZMQStalledReaderIsDropped(t *testing.T) {
	server, client := net.Pipe() // unbuffered: a write waits for a read
	defer client.Close()
	released := make(chan struct{})
	c := &guardedConn{Conn: server, writeTimeout: time.Millisecond, release: func() { close(released) }}
	if err := c.greet(); err == nil {
		t.Fatal("greet to a peer that reads nothing succeeded")
	}
	select {
	case <-released:
	default:
		t.Fatal("a stalled write kept the connection's slot")
	}

	server, client = net.Pipe()
	defer client.Close()
	c = &guardedConn{Conn: server, writeTimeout: time.Hour, release: func() {}}
	got := make(chan []byte)
	go func() {
		b := make([]byte, zmtpGreetingLen+3)
		_, err := io.ReadFull(client, b)
		if err != nil {
			b = nil
		}
		got <- b
	}()
	if err := c.greet(); err != nil {
		t.Fatal(err)
	}
	for _, p := range [][]byte{zmq4Greeting[:10], zmq4Greeting[10:], {7, 8, 9}} {
		if n, err := c.Write(p); n != len(p) || err != nil {
			t.Fatalf("Write(% x) = %d, %v", p, n, err)
		}
	}
	if b := <-got; !bytes.Equal(b, cat(zmq4Greeting[:], []byte{7, 8, 9})) {
		t.Fatalf("the peer read % x, want one greeting and then 07 08 09", b)
	}
	c.greeted = 1
	var ne net.Error
	if _, err := c.Write([]byte{0x42}); !errors.As(err, &ne) || ne.Timeout() {
		t.Errorf("a greeting from another zmq4 version: %v, want a refusal", err)
	}
}
