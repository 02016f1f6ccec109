package kvevents

import (
	"fmt"

	"github.com/go-zeromq/zmq4"
)

// ListenGuardedPub sets s's high-water mark to the hub PUB's and binds it
// at ep behind the PUB peer guard (zmqguard.go, zmqconn.go): the same
// connection cap, handshake deadline, frame bounds, subscription-only
// filter and write deadline as the KV-event PUB. Other publishers of the
// live server (the forward-pass metrics) bind through it so that no PUB
// socket of the process is open to an unguarded peer.
func ListenGuardedPub(s zmq4.Socket, ep string) error {
	if err := s.SetOption(zmq4.OptionHWM, pubHWM); err != nil {
		return fmt.Errorf("kvevents: set PUB high-water mark: %w", err)
	}
	return listenGuarded(s, ep, rolePub)
}

// Endpoint is s's bound endpoint ("tcp://host:port"), "" when unbound.
func Endpoint(s zmq4.Socket) string { return endpoint(s) }
