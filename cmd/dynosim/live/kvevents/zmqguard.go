package kvevents

import (
	"encoding/binary"
	"fmt"
)

// The frame guard reads what a peer sends to the PUB or replay socket before
// zmq4 does. zmq4 v0.17.0 allocates the body of a frame as soon as it has
// read the frame's size, however large the peer claims it is (a 73-byte
// greeting and header claiming 2^62 bytes panicked the whole process), so
// the guard parses the ZMTP 3.x framing (https://rfc.zeromq.org/spec/23/,
// /spec/37/ for 3.1) and hands zmq4 a frame header only once it has checked
// the size against a bound; a peer that breaks the bounds or the framing
// loses its connection.

// ZMTP 3.x wire constants.
const (
	zmtpGreetingLen  = 64 // signature (10), version (2), mechanism (20), as-server (1), filler (31)
	zmtpSignatureLen = 10 // %xFF, 8 bytes of padding, %x7F
	zmtpMajor        = 3
	flagMore         = 0x01
	flagLong         = 0x02 // an 8-byte big-endian size follows, else a 1-byte size
	flagCommand      = 0x04
	flagReserved     = 0xf8 // must be zero (ZMTP 3.0, "Framing")
)

// Bounds on what a peer may make zmq4 allocate. Peers of these sockets send
// little: a NULL-mechanism READY command (a socket type and an identity of
// at most 255 bytes), PUB subscriptions (one frame: a flag byte and a topic
// prefix such as "kv@worker-1@", tens of bytes) and replay requests (at most
// three frames: "", an 8-byte seq and a topic prefix). 64 KiB is a thousand
// times that and still small enough that maxPeerConns peers cannot hurt.
const (
	maxPeerMessage = 64 << 10 // body bytes of one frame, and of all frames of one message
	maxPeerFrames  = 16       // frames of one message
)

// guardRole says which socket a guard stands in front of.
type guardRole uint8

const (
	// roleReplay (the ROUTER) passes every frame within the bounds: the hub
	// reads every request and ignores malformed ones.
	roleReplay guardRole = iota
	// rolePub passes, after the handshake, only subscriptions: single-frame
	// messages whose first byte is 1 (subscribe) or 0 (unsubscribe). zmq4's
	// PUB queues anything else for a Recv that a PUB never makes, and the
	// connection's reader blocks for good once ten are queued; so the guard
	// drops such messages (and commands, such as a ZMTP 3.1 heartbeat PING,
	// which zmq4's PUB would queue the same way) instead of passing them on.
	rolePub
)

// guardError is a peer that broke the bounds or the framing. It is a
// net.Error that is not a timeout, so that zmq4 treats the connection as
// failed and drops it.
type guardError struct{ msg string }

func (e *guardError) Error() string   { return "kvevents: ZMQ peer refused: " + e.msg }
func (e *guardError) Timeout() bool   { return false }
func (e *guardError) Temporary() bool { return false }

func refuse(format string, args ...any) error {
	return &guardError{msg: fmt.Sprintf(format, args...)}
}

// frameGuard is the parsing state machine for the bytes one peer sends. It
// is fed the bytes as they arrive, in pieces of any size, and appends what
// may pass to zmq4 to its output: the same bytes in the same order, less
// any message it drops (rolePub) and less a header it still holds.
//
// It allocates nothing itself; it holds at most one frame header and, for
// rolePub, the first body byte that decides whether the message passes.
type frameGuard struct {
	role     guardRole
	greeting int  // greeting bytes seen, up to zmtpGreetingLen
	ready    bool // the peer's handshake command has ended

	held  [10]byte // a frame header not yet passed on (and rolePub's deciding byte)
	nheld int

	body     uint64 // body bytes of the current frame still to come
	pass     bool   // the current message goes to zmq4 (else it is dropped)
	frames   int    // frames of the current message begun so far
	msgBytes uint64 // body bytes of the current message so far
	more     bool   // the current frame is not the message's last
	err      error  // the first refusal; every later feed returns it
}

// feed parses in and appends to out what zmq4 may read. On a refusal it
// returns out with everything before the offending byte that may pass, and
// the error; the guard refuses everything after.
func (g *frameGuard) feed(in, out []byte) ([]byte, error) {
	for len(in) > 0 && g.err == nil {
		switch {
		case g.greeting < zmtpGreetingLen:
			n := min(len(in), zmtpGreetingLen-g.greeting)
			for i, b := range in[:n] {
				if err := checkGreeting(g.greeting+i, b); err != nil {
					g.err = err
					return append(out, in[:i]...), err
				}
			}
			out = append(out, in[:n]...)
			g.greeting += n
			in = in[n:]
		case g.body > 0:
			n := uint64(len(in))
			if n > g.body {
				n = g.body
			}
			if g.pass {
				out = append(out, in[:n]...)
			}
			g.body -= n
			in = in[n:]
			if g.body == 0 {
				g.endFrame()
			}
		default:
			g.held[g.nheld] = in[0]
			g.nheld++
			in = in[1:]
			out, g.err = g.header(out)
		}
	}
	return out, g.err
}

// checkGreeting checks greeting byte i: the signature, and a major version
// whose framing is the one the guard parses. zmq4 checks the rest.
func checkGreeting(i int, b byte) error {
	switch {
	case i == 0 && b != 0xff, i == zmtpSignatureLen-1 && b != 0x7f:
		return refuse("not a ZMTP 3 greeting (byte %d is %#02x)", i, b)
	case i == zmtpSignatureLen && b != zmtpMajor:
		return refuse("ZMTP major version %d, want %d", b, zmtpMajor)
	}
	return nil
}

// header takes the frame header held so far: once it is complete (and, for
// a possible subscription, its first body byte is in), it checks the size
// against the bounds and passes the header on or starts dropping the
// message.
func (g *frameGuard) header(out []byte) ([]byte, error) {
	flags := g.held[0]
	if g.nheld == 1 {
		switch {
		case flags&flagReserved != 0:
			return out, refuse("frame flags %#02x set reserved bits", flags)
		case flags&flagCommand != 0 && flags&flagMore != 0:
			return out, refuse("a command with the more flag")
		case flags&flagCommand != 0 && g.frames > 0:
			return out, refuse("a command inside a multi-frame message")
		case flags&flagCommand == 0 && !g.ready:
			return out, refuse("a message frame before the handshake command")
		}
	}
	hdrLen := 2
	if flags&flagLong != 0 {
		hdrLen = 9
	}
	if g.nheld < hdrLen {
		return out, nil
	}
	size := uint64(g.held[1])
	if hdrLen == 9 {
		size = binary.BigEndian.Uint64(g.held[1:9])
	}
	if g.nheld == hdrLen { // first time the header is complete
		if size > maxPeerMessage-g.msgBytes {
			return out, refuse("frame claims %d bytes, over the %d-byte bound on a message", size, maxPeerMessage)
		}
		if g.frames == maxPeerFrames {
			return out, refuse("message has over %d frames", maxPeerFrames)
		}
		if g.frames == 0 {
			g.pass = true
		}
	}
	// A PUB peer's message passes only if it is one frame whose first
	// byte is 0 or 1; the handshake command always passes.
	if g.role == rolePub && g.ready && g.frames == 0 {
		switch {
		case flags&(flagCommand|flagMore) != 0 || size == 0:
			g.pass = false
		case g.nheld == hdrLen:
			return out, nil // wait for the first body byte
		default:
			g.pass = g.held[hdrLen] <= 1
		}
	}
	if g.pass {
		out = append(out, g.held[:g.nheld]...)
	}
	g.body = size - uint64(g.nheld-hdrLen)
	g.frames++
	g.msgBytes += size
	g.more = flags&flagMore != 0
	g.nheld = 0
	if g.body == 0 {
		g.endFrame()
	}
	return out, nil
}

// endFrame ends the current frame and, if it was the last, its message.
func (g *frameGuard) endFrame() {
	if g.more {
		return
	}
	g.ready = true // the first frame after the greeting is the handshake command
	g.frames, g.msgBytes, g.pass = 0, 0, false
}
