package live

import (
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"
)

// conns caps the server's open connections and tracks their states. A
// client that connects and never sends, sends slowly, or keeps a
// keep-alive connection idle holds a file descriptor; without a cap, a few
// hundred of them exhausted the open-file limit and every later request
// waited for an accept that failed with EMFILE (issue 29 item 4). With it,
// Accept waits for a free slot once max connections are open, and first
// makes one: it closes the connection idle longest between requests, which
// HTTP clients expect (a client retries a request on a pooled connection
// the server closed; Go's transport, urllib3, undici do), else the oldest
// that has sent nothing for silentGrace (a client sends its request as it
// connects; nginx likewise drops idle keep-alive connections first when
// out of worker_connections). A connection still sending its request ends
// at the read timeouts. The same tracking lets a shutdown close at once
// the connections that have sent nothing.
type conns struct {
	max  int
	mu   sync.Mutex
	open int
	// idle holds the connections between requests, with when they became
	// idle; fresh those that have sent nothing yet (Go's StateNew).
	idle  map[net.Conn]time.Time
	fresh map[net.Conn]time.Time
	freed chan struct{} // a slot may be free, or a connection went idle
}

// silentGrace is how long a new connection may send nothing before a
// server at its connection cap may close it for another.
const silentGrace = time.Second

func newConns(max int) *conns {
	return &conns{max: max, idle: map[net.Conn]time.Time{}, fresh: map[net.Conn]time.Time{}, freed: make(chan struct{}, 1)}
}

func (c *conns) signal() {
	select {
	case c.freed <- struct{}{}:
	default:
	}
}

// state is the http.Server's ConnState hook.
func (c *conns) state(nc net.Conn, st http.ConnState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.idle, nc)
	delete(c.fresh, nc)
	switch st {
	case http.StateNew:
		c.fresh[nc] = time.Now()
	case http.StateIdle:
		c.idle[nc] = time.Now()
		c.signal() // an Accept waiting at the cap may take its slot
	}
}

// shed closes the connection idle longest, else the one silent longest
// past silentGrace, if any.
func (c *conns) shed() bool {
	c.mu.Lock()
	victim, _ := oldest(c.idle, time.Time{})
	if victim == nil {
		victim, _ = oldest(c.fresh, time.Now().Add(-silentGrace))
	}
	delete(c.idle, victim)
	delete(c.fresh, victim)
	c.mu.Unlock()
	if victim == nil {
		return false
	}
	victim.Close()
	return true
}

// oldest is the connection of m with the earliest time, before the bound
// (zero: any).
func oldest(m map[net.Conn]time.Time, before time.Time) (net.Conn, time.Time) {
	var victim net.Conn
	var since time.Time
	for nc, t := range m {
		if (before.IsZero() || t.Before(before)) && (victim == nil || t.Before(since)) {
			victim, since = nc, t
		}
	}
	return victim, since
}

// closeFresh closes the connections that have sent nothing (at shutdown:
// Go's Shutdown waits five seconds for one, which a client pool may hold).
func (c *conns) closeFresh() {
	c.mu.Lock()
	var fresh []net.Conn
	for nc := range c.fresh {
		fresh = append(fresh, nc)
	}
	c.mu.Unlock()
	for _, nc := range fresh {
		nc.Close() // not under mu: its slot goes back through it
	}
}

// listener wraps ln with the cap.
func (c *conns) listener(ln net.Listener) net.Listener {
	return &capListener{Listener: ln, c: c, done: make(chan struct{})}
}

type capListener struct {
	net.Listener
	c        *conns
	done     chan struct{}
	closeOne sync.Once
}

// Accept waits for a slot (shedding an idle connection to make one), then
// accepts. On EMFILE (the file limit is below the cap, or other files use
// it) it sheds one too, so Go's server's accept retry finds a descriptor.
func (l *capListener) Accept() (net.Conn, error) {
	c := l.c
	for {
		c.mu.Lock()
		if c.open < c.max {
			c.open++
			c.mu.Unlock()
			break
		}
		c.mu.Unlock()
		if c.shed() {
			continue // its Close gave its slot back
		}
		t := time.NewTimer(silentGrace / 4) // a new connection may pass silentGrace
		select {
		case <-c.freed:
		case <-t.C:
		case <-l.done:
			t.Stop()
			return nil, net.ErrClosed
		}
		t.Stop()
	}
	nc, err := l.Listener.Accept()
	if err != nil {
		c.release()
		if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
			c.shed()
		}
		return nil, err
	}
	return &capConn{Conn: nc, c: c}, nil
}

func (l *capListener) Close() error {
	l.closeOne.Do(func() { close(l.done) })
	return l.Listener.Close()
}

func (c *conns) release() {
	c.mu.Lock()
	c.open--
	c.mu.Unlock()
	c.signal()
}

// capConn gives its slot back once closed.
type capConn struct {
	net.Conn
	c    *conns
	once sync.Once
}

func (cc *capConn) Close() error {
	err := cc.Conn.Close()
	cc.once.Do(cc.c.release)
	return err
}

// Defaults of the connection limits (Options; flags of `dynosim live`).
const (
	// DefaultReadTimeout bounds reading a request's headers, and again its
	// body (8 MiB at 6.7 Mbit/s; the header bound was 10 s before).
	DefaultReadTimeout = 10 * time.Second
	// DefaultIdleTimeout closes a keep-alive connection idle this long
	// (nginx's keepalive_timeout is 75 s, Go's client drops its own idle
	// connections after 90 s).
	DefaultIdleTimeout = 60 * time.Second
)

// bodyDeadline bounds reading each request's body by the read timeout,
// and lifts the bound once the body is read. Not http.Server.ReadTimeout:
// its deadline stays on the connection while the handler runs, and Go's
// server cancels a request whose background read times out, which would
// cut every stream longer than the timeout (SSE completions and
// /v1/kv_events).
func bodyDeadline(next http.Handler, timeout time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		if rc.SetReadDeadline(time.Now().Add(timeout)) == nil {
			// On a copy: Go's server looks at its own request's body after
			// the handler to decide whether to read what is left of it.
			r = r.WithContext(r.Context())
			r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc}
		}
		next.ServeHTTP(w, r)
	})
}

// deadlineBody lifts its connection's read deadline at the body's end.
type deadlineBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	once sync.Once
}

func (d *deadlineBody) Read(p []byte) (int, error) {
	n, err := d.ReadCloser.Read(p)
	if err == io.EOF {
		d.lift()
	}
	return n, err
}

func (d *deadlineBody) lift() { d.once.Do(func() { d.rc.SetReadDeadline(time.Time{}) }) }

// MaxAutoConnections bounds DefaultMaxConnections.
const MaxAutoConnections = 10000

// DefaultMaxConnections is the connection cap when none is given: the
// open-file limit less 64 files for everything else the server opens (its
// listeners, ZMQ sockets and their peers, its own files), or half a small
// limit, and at most MaxAutoConnections.
func DefaultMaxConnections() int {
	n, ok := openFileLimit()
	if !ok {
		return MaxAutoConnections
	}
	return max(1, min(MaxAutoConnections, max(n-64, n/2)))
}
