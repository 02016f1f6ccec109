package kvevents

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/go-zeromq/zmq4"
)

const (
	// pubHWM bounds zmq4's own PUB queue. Past it zmq4 discards messages
	// silently, like libzmq at its high-water mark, so those losses do not
	// show in DroppedZMQ; a consumer sees them as sequence gaps and replays.
	pubHWM = 10000
	// replayTimeout bounds how long a replay send waits for its DEALER's
	// connection; zmq4 cannot interrupt a TCP write already under way.
	replayTimeout = 10 * time.Second
)

// endSeq is the replay end marker, vLLM's (-1).to_bytes(8, "big", signed=True).
var endSeq = []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// zmqServer is one ListenZMQ's sockets and the PUB sender's queue.
type zmqServer struct {
	pub    zmq4.Socket
	router zmq4.Socket // nil without replay
	out    chan *batch
}

// ListenZMQ binds a PUB socket at pub (e.g. "tcp://127.0.0.1:5557") and, if
// replay is not empty, a ROUTER socket for replay requests there. It returns
// once both are bound, or with the bind error, and serves them in goroutines
// until ctx is done or the hub closes; then ListenZMQ may be called again.
// Batches published before it are not sent live but can be replayed.
func (h *Hub) ListenZMQ(ctx context.Context, pub, replay string) error {
	if pub == "" {
		return errors.New("kvevents: ListenZMQ: empty PUB endpoint")
	}
	h.mu.Lock()
	switch {
	case h.closed:
		h.mu.Unlock()
		return ErrClosed
	case h.zmqBusy:
		h.mu.Unlock()
		return errors.New("kvevents: ListenZMQ: already listening")
	}
	h.zmqBusy = true
	h.mu.Unlock()

	z, zctx, cancel, err := h.bind(ctx, pub, replay)
	if err != nil {
		h.mu.Lock()
		h.zmqBusy = false
		h.mu.Unlock()
		return err
	}
	h.mu.Lock()
	if h.closed {
		h.zmqBusy = false
		h.mu.Unlock()
		cancel()
		return errors.Join(ErrClosed, z.close())
	}
	h.zmq = z
	// Adding under h.mu, before Close can set closed, keeps wg.Add ahead of
	// Close's wg.Wait.
	h.wg.Add(2)
	if z.router != nil {
		h.wg.Add(1)
		go h.serveReplay(zctx, z)
	}
	h.mu.Unlock()
	go h.sendPub(zctx, z)
	go func() {
		defer h.wg.Done()
		<-zctx.Done()
		cancel()
		err := z.close()
		h.mu.Lock()
		if h.zmq == z {
			h.zmq = nil
		}
		h.zmqBusy = false
		h.zmqErr = errors.Join(h.zmqErr, err)
		h.mu.Unlock()
	}()
	return nil
}

// bind opens and binds the sockets under a context that ends with ctx or
// with the hub.
func (h *Hub) bind(ctx context.Context, pub, replay string) (*zmqServer, context.Context, context.CancelFunc, error) {
	zctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(h.ctx, cancel)
	cancelAll := func() { stop(); cancel() }
	z := &zmqServer{pub: zmq4.NewPub(zctx), out: make(chan *batch, zmqBuffer)}
	if err := z.pub.SetOption(zmq4.OptionHWM, pubHWM); err != nil {
		cancelAll()
		return nil, nil, nil, errors.Join(fmt.Errorf("kvevents: set PUB high-water mark: %w", err), z.close())
	}
	if err := listenGuarded(z.pub, pub, rolePub); err != nil {
		cancelAll()
		return nil, nil, nil, errors.Join(fmt.Errorf("kvevents: bind PUB %q: %w", pub, err), z.close())
	}
	if replay != "" {
		z.router = zmq4.NewRouter(zctx, zmq4.WithTimeout(replayTimeout))
		if err := listenGuarded(z.router, replay, roleReplay); err != nil {
			cancelAll()
			return nil, nil, nil, errors.Join(fmt.Errorf("kvevents: bind replay ROUTER %q: %w", replay, err), z.close())
		}
	}
	return z, zctx, cancelAll, nil
}

// listenGuarded binds s at ep behind the peer guard of role (zmqconn.go).
func listenGuarded(s zmq4.Socket, ep string, role guardRole) error {
	gep, err := guardedEndpoint(ep, role)
	if err != nil {
		return err
	}
	return s.Listen(gep)
}

// close closes the sockets. A peer connection that its subscriber already
// closed is not a failure: zmq4 reports closing it again as one.
func (z *zmqServer) close() error {
	err := quiet(z.pub.Close())
	if z.router != nil {
		err = errors.Join(err, quiet(z.router.Close()))
	}
	if err != nil {
		return fmt.Errorf("kvevents: close ZMQ sockets: %w", err)
	}
	return nil
}

// quiet drops the errors of closing a connection twice.
func quiet(err error) error {
	if errors.Is(err, net.ErrClosed) || errors.Is(err, zmq4.ErrClosedConn) {
		return nil
	}
	return err
}

// Addrs returns the bound PUB and replay endpoints ("tcp://host:port"), or
// empty strings when not listening; with port 0 they name the chosen port.
func (h *Hub) Addrs() (pub, replay string) {
	h.mu.Lock()
	z := h.zmq
	h.mu.Unlock()
	if z == nil {
		return "", ""
	}
	pub = endpoint(z.pub)
	if z.router != nil {
		replay = endpoint(z.router)
	}
	return pub, replay
}

func endpoint(s zmq4.Socket) string {
	a := s.Addr()
	if a == nil {
		return ""
	}
	return a.Network() + "://" + a.String()
}

// sendPub sends queued batches on the PUB socket. It is a goroutine of its
// own because a zmq4 send can block, and Publish must not.
func (h *Hub) sendPub(ctx context.Context, z *zmqServer) {
	defer h.wg.Done()
	for {
		select {
		case <-ctx.Done():
			return
		case b := <-z.out:
			if err := z.pub.SendMulti(zmq4.NewMsgFrom(b.topic, b.seqBE, b.msgpack)); err != nil && ctx.Err() == nil {
				h.droppedZMQ.Add(1)
			}
		}
	}
}

// serveReplay answers replay requests one at a time, as vLLM does.
func (h *Hub) serveReplay(ctx context.Context, z *zmqServer) {
	defer h.wg.Done()
	for {
		msg, err := z.router.Recv()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			// zmq4's ROUTER only fails a Recv when it closes; anything else
			// is one bad request, not a reason to stop serving.
			continue
		}
		req, ok := parseReplay(msg.Frames)
		if !ok {
			continue // vLLM ignores malformed requests too
		}
		_ = h.replay(z.router, req) // a failed send abandons only this client
	}
}

// replayReq is a parsed replay request.
type replayReq struct {
	id     []byte // the DEALER's identity, prepended by the ROUTER
	start  uint64
	prefix []byte // topic prefix (extension); nil: every batch
}

// parseReplay parses a ROUTER message [identity, "", start_seq], the vLLM
// request, or [identity, start_seq]. A frame after start_seq, if any, is a
// topic prefix: this hub's extension, because one hub serves many workers
// and the replayed frames, like vLLM's, carry no topic to tell them apart.
func parseReplay(frames [][]byte) (replayReq, bool) {
	if len(frames) < 2 {
		return replayReq{}, false
	}
	req := replayReq{id: frames[0]}
	rest := frames[1:]
	if len(rest[0]) == 0 {
		rest = rest[1:] // the empty delimiter frame
	}
	if len(rest) == 0 || len(rest) > 2 || len(rest[0]) != 8 {
		return replayReq{}, false
	}
	req.start = binary.BigEndian.Uint64(rest[0])
	if len(rest) == 2 {
		req.prefix = rest[1]
	}
	return req, true
}

// replay sends the requester the retained batches with seq >= start whose
// topic has the prefix, then the end marker.
func (h *Hub) replay(router zmq4.Socket, req replayReq) error {
	for _, b := range h.retained(req.start) {
		if !bytes.HasPrefix(b.topic, req.prefix) {
			continue
		}
		if err := router.Send(zmq4.NewMsgFrom(req.id, nil, b.seqBE, b.msgpack)); err != nil {
			return fmt.Errorf("kvevents: replay seq %d: %w", b.seq, err)
		}
	}
	if err := router.Send(zmq4.NewMsgFrom(req.id, nil, endSeq, nil)); err != nil {
		return fmt.Errorf("kvevents: replay end marker: %w", err)
	}
	return nil
}
