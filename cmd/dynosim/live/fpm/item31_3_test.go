package fpm

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/dynosim/dynosim-web/core/engine"
	"github.com/dynosim/dynosim-web/internal/patience"
	"github.com/go-zeromq/zmq4"
	"github.com/vmihailenco/msgpack/v5"
)

// greeting is a ZMTP 3.0 client greeting with the NULL mechanism
// (https://rfc.zeromq.org/spec/23/).
func greeting() []byte {
	g := make([]byte, 64)
	g[0], g[9], g[10] = 0xff, 0x7f, 3
	copy(g[12:32], "NULL")
	return g
}

// ready is the NULL mechanism's READY command of a SUB.
func ready() []byte {
	body := []byte("\x05READY\x0bSocket-Type")
	body = binary.BigEndian.AppendUint32(body, 3)
	body = append(body, "SUB"...)
	return append([]byte{0x04, byte(len(body))}, body...)
}

// claim is a long frame header claiming size bytes, with no body.
func claim(flags byte, size uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{flags | 0x02}, size)
}

// TestItem31_3FPMSocketGuarded: the forward-pass-metric PUB sockets bind
// through the KV-event PUB's peer guard (issue 29 item 2), so each of the
// hostile peers that crashed or blocked that socket only loses its own
// connection; a SUB dialled after it still receives a rank's pass message
// (counter_id equal to the sequence frame, the topic empty), and Close
// leaves no goroutine behind.
func TestItem31_3FPMSocketGuarded(t *testing.T) {
	p, err := Listen([]string{"tcp://127.0.0.1:0", "tcp://127.0.0.1:0"}, []Rank{{"0", 0}, {"0", 1}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := patience.Context(t)
	defer cancel()
	for _, tc := range []struct {
		name   string
		attack []byte
	}{
		{"command claims 2^62 bytes", append(greeting(), claim(0x04, 1<<62)...)},
		{"message claims 1 GiB", append(append(greeting(), ready()...), claim(0, 1<<30)...)},
		{"not ZMTP", []byte("GET / HTTP/1.1\r\n\r\n")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i, ep := range p.Addrs() {
				c, err := net.Dial("tcp", strings.TrimPrefix(ep, "tcp://"))
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				if _, err := c.Write(tc.attack); err != nil {
					t.Fatal(err)
				}
				if limit, ok := patience.Limit(t); ok {
					c.SetReadDeadline(limit)
				}
				var ne net.Error
				if _, err := io.Copy(io.Discard, c); errors.As(err, &ne) && ne.Timeout() {
					t.Fatalf("socket %d kept the hostile connection open", i)
				}
				sub := zmq4.NewSub(ctx)
				defer sub.Close()
				if err := sub.Dial(ep); err != nil {
					t.Fatal(err)
				}
				if err := sub.SetOption(zmq4.OptionSubscribe, ""); err != nil {
					t.Fatal(err)
				}
				// Publish until one arrives: the subscription reaches the
				// PUB a moment after the dial (ZMQ's slow joiner).
				got := make(chan zmq4.Msg, 1)
				go func() {
					if msg, err := sub.Recv(); err == nil {
						got <- msg
					}
				}()
				tick := time.NewTicker(10 * time.Millisecond)
				defer tick.Stop()
				for recv := false; !recv; {
					select {
					case msg := <-got:
						recv = true
						var m Message
						if err := decode(msg.Frames, &m); err != nil || m.DPRank != i || m.ScheduledRequests.SumPrefillTokens != 7 {
							t.Fatalf("socket %d after the attack: %+v, %v", i, m, err)
						}
					case <-tick.C:
						p.Pass(i, time.Now(), FromEngine(engine.FPM{PrefillRequests: 1, PrefillTokens: 7, Wall: 10_000_000}))
					case <-patience.After(t):
						t.Fatalf("socket %d serves no subscriber after the attack", i)
					}
				}
			}
		})
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	cancel() // the subscribers' sockets watch ctx
	// Its senders and the guard's listeners end. (zmq4 v0.17.0's own
	// pubMWriter.run goroutine can outlive a closed PUB: its Close signals
	// a sync.Cond that run may not be waiting on yet; not ours to end.)
	patience.Until(t, "the publisher's goroutines end", func() (bool, string) {
		buf := make([]byte, 1<<20)
		stacks := string(buf[:runtime.Stack(buf, true)])
		ours := strings.Contains(stacks, "live/fpm.(*Publisher)") || strings.Contains(stacks, "kvevents.(*guard")
		return !ours, "goroutines:\n" + stacks
	})
}

// decode checks a message's frames and decodes its payload.
func decode(frames [][]byte, m *Message) error {
	if len(frames) != 3 || len(frames[0]) != 0 || len(frames[1]) != 8 {
		return errors.New("want an empty topic, an 8-byte seq and a payload")
	}
	if err := msgpack.Unmarshal(frames[2], m); err != nil {
		return err
	}
	if m.CounterID != binary.BigEndian.Uint64(frames[1]) {
		return errors.New("counter_id is not the sequence frame")
	}
	return nil
}
