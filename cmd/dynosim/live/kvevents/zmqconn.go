package kvevents

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/go-zeromq/zmq4/transport"
)

// zmq4 takes no listener or connection option, but it takes transports: the
// hub binds "tcp://" and "ipc://" endpoints through transports of its own
// (guardedEndpoint) whose listeners put a frameGuard, deadlines and a
// connection cap in front of zmq4. That keeps the released zmq4 module,
// rather than a vendored fork of it, and the wire format unchanged.

// Peer connection bounds, per socket.
const (
	// maxPeerConns bounds the connections one socket holds, so that peers
	// cannot take every file descriptor of the process (the HTTP server's
	// too). KV routers subscribe once per router replica; a connection
	// beyond the bound is closed at once.
	maxPeerConns = 64
	// handshakeTimeout bounds how long a new connection may take to send
	// its ZMTP greeting and READY command. zmq4 runs handshakes one at a
	// time with no deadline, so one silent peer blocked every later one;
	// the listener therefore runs the peer's half of the handshake itself,
	// concurrently (see guardListener), and a silent peer costs only its
	// connection slot, for this long. (libzmq's ZMQ_HANDSHAKE_IVL is 30 s;
	// a handshake on a working link takes milliseconds.)
	handshakeTimeout = 10 * time.Second
	// peerBufSize is the read buffer of one connection.
	peerBufSize = 4096
)

// guardedTransports maps zmq4 network names to the guarded ones registered
// for them, per role. Only the networks a remote peer can reach are
// guarded; "inproc" stays within the process.
var guardedTransports = map[string][2]string{
	"tcp": {roleReplay: "tcp+kvevents-replay", rolePub: "tcp+kvevents-pub"},
	"ipc": {roleReplay: "ipc+kvevents-replay", rolePub: "ipc+kvevents-pub"},
}

// registerGuards registers the guarded transports with zmq4, once.
var registerGuards = sync.OnceValue(func() error {
	for network, names := range guardedTransports {
		inner := transport.New(map[string]string{"tcp": "tcp", "ipc": "unix"}[network])
		for role, name := range names {
			if err := zmq4.RegisterTransport(name, guardTransport{inner: inner, role: guardRole(role)}); err != nil {
				return err
			}
		}
	}
	return nil
})

// guardedEndpoint returns the endpoint that binds ep through the guard of
// role; an endpoint of another transport is returned as it is, for zmq4 to
// bind or refuse.
func guardedEndpoint(ep string, role guardRole) (string, error) {
	network, addr, ok := strings.Cut(ep, "://")
	names, guarded := guardedTransports[network]
	if !ok || !guarded {
		return ep, nil
	}
	if err := registerGuards(); err != nil {
		return "", err
	}
	return names[role] + "://" + addr, nil
}

// guardTransport is a zmq4 transport whose listeners are guardListeners.
type guardTransport struct {
	inner transport.Transport
	role  guardRole
}

func (t guardTransport) Dial(ctx context.Context, d transport.Dialer, addr string) (net.Conn, error) {
	return t.inner.Dial(ctx, d, addr)
}

func (t guardTransport) Listen(ctx context.Context, addr string) (net.Listener, error) {
	l, err := t.inner.Listen(ctx, addr)
	if err != nil {
		return nil, err
	}
	return newGuardListener(l, t.role), nil
}

func (t guardTransport) Addr(ep string) (string, error) { return t.inner.Addr(ep) }

// zmq4Greeting is the greeting zmq4 v0.17.0 sends on every connection
// with the NULL mechanism (conn.go, greet): ZMTP 3.0, as-server 0.
var zmq4Greeting = func() [zmtpGreetingLen]byte {
	var g [zmtpGreetingLen]byte
	g[0], g[9], g[10] = 0xff, 0x7f, zmtpMajor
	copy(g[12:32], "NULL")
	return g
}()

// guardListener accepts connections, caps how many are open, and runs
// each one's handshake up to the peer's READY in a goroutine of its own:
// it sends zmq4's greeting itself (every ZMTP 3 peer, libzmq included,
// waits for the other side's signature before it sends its whole
// greeting) and reads the peer's greeting and READY command. Only then
// does it hand the connection to zmq4's accept loop, whose handshake then
// finds all it reads already in, and whose greeting the connection drops
// as sent. So no peer, however slow, holds up zmq4's accept loop.
type guardListener struct {
	net.Listener
	role             guardRole
	handshakeTimeout time.Duration
	writeTimeout     time.Duration

	slots chan struct{}     // one per open connection
	ready chan *guardedConn // connections whose READY is in
	done  chan struct{}     // closed by Close
	once  sync.Once
	wg    sync.WaitGroup

	mu      sync.Mutex
	closed  bool
	vetting map[*guardedConn]struct{} // connections still in their handshake
}

func newGuardListener(inner net.Listener, role guardRole) *guardListener {
	l := &guardListener{
		Listener:         inner,
		role:             role,
		handshakeTimeout: handshakeTimeout,
		writeTimeout:     writeTimeout,
		slots:            make(chan struct{}, maxPeerConns),
		ready:            make(chan *guardedConn),
		done:             make(chan struct{}),
		vetting:          make(map[*guardedConn]struct{}),
	}
	l.wg.Add(1)
	go l.serve()
	return l
}

// serve accepts connections until the listener closes.
func (l *guardListener) serve() {
	defer l.wg.Done()
	var backoff time.Duration
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors, say: back off as net/http does,
			// rather than spin.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			select {
			case <-time.After(backoff):
				continue
			case <-l.done:
				return
			}
		}
		backoff = 0
		select {
		case l.slots <- struct{}{}:
		default:
			c.Close() // at the cap: now, so the peer knows and the descriptor is back
			continue
		}
		gc := &guardedConn{Conn: c, g: frameGuard{role: l.role}, writeTimeout: l.writeTimeout,
			release: func() { <-l.slots }}
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			gc.Close()
			return
		}
		l.vetting[gc] = struct{}{}
		l.wg.Add(1)
		l.mu.Unlock()
		go l.vet(gc)
	}
}

// vet runs c's handshake up to the peer's READY and hands c to Accept.
func (l *guardListener) vet(c *guardedConn) {
	defer l.wg.Done()
	err := c.SetReadDeadline(time.Now().Add(l.handshakeTimeout))
	if err == nil {
		err = c.greet()
	}
	if err == nil {
		err = c.readHandshake()
	}
	l.mu.Lock()
	delete(l.vetting, c)
	l.mu.Unlock()
	if err != nil {
		c.Close()
		return
	}
	select {
	case l.ready <- c:
	case <-l.done:
		c.Close()
	}
}

// Accept returns the next connection whose peer has sent its READY.
func (l *guardListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ready:
		return c, nil
	case <-l.done:
		return nil, &net.OpError{Op: "accept", Net: l.Addr().Network(), Addr: l.Addr(), Err: net.ErrClosed}
	}
}

// Close closes the listener and the connections not yet handed to zmq4,
// and waits for its goroutines.
func (l *guardListener) Close() error {
	var err error
	l.once.Do(func() {
		close(l.done)
		err = l.Listener.Close()
		l.mu.Lock()
		l.closed = true
		for c := range l.vetting {
			c.Close()
		}
		l.mu.Unlock()
		l.wg.Wait()
	})
	return err
}

// guardedConn is one peer connection: reads go through its frameGuard,
// writes have a deadline.
type guardedConn struct {
	net.Conn
	g            frameGuard
	writeTimeout time.Duration
	release      func() // frees the connection's slot
	// greeted counts the bytes of zmq4's greeting still to drop from its
	// writes, since greet sent them already. zmq4 writes to a connection
	// from one goroutine at a time.
	greeted int

	// Read side, used by one goroutine at a time: the listener's vet,
	// then zmq4's handshake, then zmq4's reader.
	buf     []byte // read buffer
	obuf    []byte // pending's array, reused
	pending []byte // guarded bytes not yet read by zmq4
	err     error  // the read error to return once pending is empty

	closeOnce sync.Once
}

// greet sends zmq4's greeting for it.
func (c *guardedConn) greet() error {
	if _, err := c.write(zmq4Greeting[:]); err != nil {
		return err
	}
	c.greeted = zmtpGreetingLen
	return nil
}

// readHandshake reads until the peer's handshake command is in.
func (c *guardedConn) readHandshake() error {
	for !c.g.ready && c.err == nil {
		c.fill()
	}
	return c.err // also when the read that ended it brought a refused frame
}

// Read returns the bytes the guard passed, then the error that ended them.
func (c *guardedConn) Read(p []byte) (int, error) {
	for len(c.pending) == 0 {
		if c.err != nil {
			return 0, c.err
		}
		if len(p) == 0 {
			return 0, nil
		}
		c.fill()
	}
	n := copy(p, c.pending)
	c.pending = c.pending[n:]
	return n, nil
}

// fill reads once from the peer and appends what the guard passes to
// pending. A connection whose read fails is closed here: zmq4 does not
// close a connection whose handshake failed.
func (c *guardedConn) fill() {
	if c.buf == nil {
		c.buf = make([]byte, peerBufSize)
	}
	if len(c.pending) == 0 {
		c.pending = c.obuf[:0] // reuse: Read has copied out what was there
	}
	n, err := c.Conn.Read(c.buf)
	wasReady := c.g.ready
	out, gerr := c.g.feed(c.buf[:n], c.pending)
	// pending starts where its array does (Read consumes it only when fill
	// is not running), so out's array is the one to keep.
	c.pending, c.obuf = out, out[:0]
	if !wasReady && c.g.ready && gerr == nil {
		// The handshake is in: from now on a subscriber may be quiet
		// for as long as it likes.
		err = errors.Join(err, c.Conn.SetReadDeadline(time.Time{}))
	}
	if gerr != nil {
		err = gerr
	}
	if err != nil {
		c.err = err
		c.Close()
	}
}

// Write writes p, less the greeting greet sent already.
func (c *guardedConn) Write(p []byte) (int, error) {
	if c.greeted == 0 {
		return c.write(p)
	}
	sent := zmq4Greeting[zmtpGreetingLen-c.greeted:]
	n := min(len(p), len(sent))
	if !bytes.Equal(p[:n], sent[:n]) {
		// Another zmq4 version, with another greeting: fail loudly
		// rather than have said something else to the peer.
		c.Close()
		return 0, &guardError{msg: fmt.Sprintf("zmq4 greets with %x, the guard sent %x", p[:n], sent[:n])}
	}
	c.greeted -= n
	m, err := c.write(p[n:])
	return n + m, err
}

// write writes p with a deadline: zmq4's PUB writes to its subscribers one
// after another, so a subscriber that stops reading would stall them all.
// One that takes longer than writeTimeout is dropped; it may reconnect and
// replay what it missed.
func (c *guardedConn) write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if err := c.Conn.SetWriteDeadline(time.Now().Add(c.writeTimeout)); err != nil {
		return 0, err
	}
	n, err := c.Conn.Write(p)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		// A timed-out write may have sent part of a frame: the stream
		// is broken. Not a timeout to zmq4, which drops only
		// connections whose errors are not.
		c.Close()
		err = &guardError{msg: "it read nothing for " + c.writeTimeout.String() + " while we wrote"}
	}
	return n, err
}

// Close closes the connection and frees its slot.
func (c *guardedConn) Close() error {
	err := c.Conn.Close()
	c.closeOnce.Do(c.release)
	return err
}
