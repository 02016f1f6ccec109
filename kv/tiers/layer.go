package tiers

import (
	"github.com/dynosim/dynosim-web/kv"
	"github.com/dynosim/dynosim-web/timing"
)

// Layer is one worker's lower tiers as a layer around its G1 block pool:
// the pool's evicted blocks go down through the layer (their slots stay
// quarantined while the copy runs), and ticking the layer gives the pool
// back the slots whose copies ended. It attaches to any pool that can
// offload (kv.Offloader), so no caller needs to know the pool's type.
type Layer struct {
	*Worker
	pool kv.Offloader
}

// Attach joins a worker whose G1 is pool to the system: events, if not
// nil, receive its G2 Stored and Removed events.
func (s *System) Attach(pool kv.Offloader, events *kv.EventLog) *Layer {
	w := s.Join(events)
	pool.SetOffload(w.Offload)
	if s.cfg.WriteThrough {
		pool.SetStore(w.Store)
	}
	return &Layer{Worker: w, pool: pool}
}

// Tick advances the tiers to now and frees the G1 slots whose offload
// copies ended; requests whose onboarded blocks landed are in Ready.
func (l *Layer) Tick(now timing.Time) {
	l.Worker.Tick(now)
	for _, slot := range l.Freed() {
		l.pool.Unquarantine(slot)
	}
}
