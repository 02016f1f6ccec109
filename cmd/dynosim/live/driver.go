// Package live is dynosim's live mode: one simulated deployment behind an
// OpenAI-compatible HTTP endpoint, its engine cores stepped on the wall
// clock by the same replay loop offline prediction runs (core/replay's
// live mode), with vLLM-native Prometheus metrics and KV events. The
// driver goroutine owns the loop and its clock; HTTP handlers talk to it
// through a command channel and read their own request's tokens from a
// per-request buffer, so no lock is held across a stream. docs/live.md.
package live

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dynosim/dynosim-web/cmd/dynosim/live/fpm"
	"github.com/dynosim/dynosim-web/cmd/dynosim/live/kvevents"
	"github.com/dynosim/dynosim-web/cmd/dynosim/live/metrics"
	"github.com/dynosim/dynosim-web/core/engine"
	"github.com/dynosim/dynosim-web/core/replay"
	"github.com/dynosim/dynosim-web/core/sim"
	"github.com/dynosim/dynosim-web/timing"
)

// stream is one request between its handler and the driver.
type stream struct {
	prompt    []uint32 // read by the driver at submit
	promptLen int
	maxTokens int
	priority  int32 // checked by parse (sim.Live.CheckPriority)

	// The driver's own: where the request is and when things happened
	// (virtual time).
	worker, rank             int
	arrival, admitted, first timing.Time
	last                     timing.Time
	generated                int
	wasAdmitted              bool
	hashes                   seqHashes // its blocks' hashes, for token_ids
	pin                      int       // the worker a per-worker port chose (-1: the router)

	// Shared with the handler under mu; notify (capacity 1) says there is
	// more to read.
	mu     sync.Mutex
	id     uint64
	toks   []uint32
	cached int
	ended  bool
	reason string // "": completed; a rejection reason; replay.Aborted
	err    error  // the driver failed or stopped
	notify chan struct{}

	// held is the request body's share of --max-inflight-bytes, given back
	// once an engine admits the request: until then the loop keeps its
	// prompt on top of what the handler decoded.
	held *lease
}

func newStream(prompt []uint32, maxTokens int, priority int32) *stream {
	return &stream{prompt: prompt, promptLen: len(prompt), maxTokens: maxTokens, priority: priority, worker: -1, pin: -1, notify: make(chan struct{}, 1)}
}

// take moves what the driver sent since the last take into buf.
func (s *stream) take(buf []uint32) (_ []uint32, ended bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	buf = append(buf[:0], s.toks...)
	s.toks = s.toks[:0]
	return buf, s.ended
}

func (s *stream) signal() {
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// command is a handler's request to the driver: submit s, or abort it.
type command struct {
	s     *stream
	abort bool
}

// driver steps the live loop on the wall clock and observes its facts.
type driver struct {
	replay.NopObserver
	live    *sim.Live
	speedup float64
	t0      time.Time
	cmds    chan command
	streams map[uint64]*stream
	met     *metrics.Metrics
	hub     *kvevents.Hub
	// fpm publishes forward-pass metrics (nil: off); fpmBase[w] is the
	// index of worker w's rank 0 among its sockets.
	fpm     *fpm.Publisher
	fpmBase []int
	seen    [][]seen // per worker and rank: the counters already exported
	tokens  *blockTokens
	// ended are the block references of requests that ended, dropped once
	// the loop has run to now (a pass ending then may still store them).
	ended [][]uint64
	// submitting is the stream whose Submit is under way (Arrived takes it).
	submitting *stream

	// waiting counts requests accepted and not yet admitted by an engine:
	// the bounded queue behind the 429s (handlers add, the driver takes).
	waiting atomic.Int64
	done    chan struct{} // closed when run returns
	err     error         // why run returned, once done is closed
}

// virtual is the loop's time at wall time t. Both conversions saturate at
// the horizon (timing.FromNs): a product past int64 would wrap to a
// negative wait, and the driver would spin.
func (d *driver) virtual(t time.Time) timing.Time {
	return timing.FromNs(float64(t.Sub(d.t0).Nanoseconds()) * d.speedup)
}

// wall is the wall time of virtual time v.
func (d *driver) wall(v timing.Time) time.Time {
	return d.t0.Add(time.Duration(timing.FromNs(float64(v) / d.speedup)))
}

// run steps the loop until ctx is done or it fails; every stream still
// open then ends with an error.
func (d *driver) run(ctx context.Context) {
	defer close(d.done)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		if d.err = d.step(); d.err != nil {
			break
		}
		wait := time.Hour
		if next, ok := d.live.Next(); ok {
			wait = max(time.Until(d.wall(next)), 0)
		}
		if d.fpm != nil { // idle ranks' heartbeats ride the same timer
			wait = min(wait, max(time.Until(d.fpm.Heartbeats(time.Now())), 0))
		}
		timer.Reset(wait)
		select {
		case c := <-d.cmds:
			if d.err = d.step(); d.err != nil { // time caught up before the command
				break
			}
			d.command(c)
			for more := true; more && d.err == nil; { // what else came meanwhile
				select {
				case c := <-d.cmds:
					d.command(c)
				default:
					more = false
				}
			}
		case <-timer.C:
		case <-ctx.Done():
			d.err = errShutdown
		}
		if d.err != nil {
			break
		}
	}
	for _, s := range d.streams {
		s.mu.Lock()
		s.ended, s.err = true, d.err
		s.mu.Unlock()
		s.signal()
	}
}

var errShutdown = errors.New("the server is shutting down")

func (d *driver) step() error {
	_, err := d.live.RunUntil(d.virtual(time.Now()))
	for _, b := range d.ended {
		d.tokens.release(&seqHashes{blocks: b})
	}
	clear(d.ended)
	d.ended = d.ended[:0]
	return err
}

func (d *driver) command(c command) {
	s := c.s
	if c.abort {
		s.mu.Lock()
		id, ended := s.id, s.ended
		s.mu.Unlock()
		if id != 0 && !ended {
			d.live.Abort(id)
		}
		return
	}
	s.arrival = d.live.Now()
	// Arrived registers s under its id: with no frontend latency (fixed,
	// polynomial or profile timing) Submit routes the request at once, and
	// its Routed and Admitted facts must find it (registered after Submit
	// returned, the request's worker was never recorded and every
	// per-request series stayed 0: issue 29 item 6).
	d.tokens.add(&s.hashes, s.prompt...)
	d.submitting = s
	var id uint64
	var err error
	if s.pin >= 0 {
		id, err = d.live.SubmitTo(s.pin, s.prompt, s.maxTokens, s.priority)
	} else {
		id, err = d.live.Submit(s.prompt, s.maxTokens, s.priority)
	}
	d.submitting = nil
	s.prompt = nil
	if err != nil {
		d.tokens.release(&s.hashes)
		if d.streams[id] == s || id == 0 { // the loop did not end it already
			delete(d.streams, id)
			d.waiting.Add(-1)
		}
		s.mu.Lock()
		s.ended, s.err = true, err
		s.mu.Unlock()
		s.signal()
		return
	}
	d.err = d.step() // route it and start a pass now
}

// Arrived implements replay.Observer: the request being submitted gets its
// id, before the loop routes it.
func (d *driver) Arrived(id uint64, _ timing.Time, _, _ int) {
	s := d.submitting
	if s == nil {
		return
	}
	d.submitting = nil
	s.mu.Lock()
	s.id = id
	s.mu.Unlock()
	d.streams[id] = s
}

func seconds(t timing.Time) float64 { return float64(t) / 1e9 }

// PassEnded implements replay.Observer: the pass's KV events go out, and
// its worker's gauges follow its load.
func (d *driver) PassEnded(w int, p *engine.Pass) {
	if len(p.Events) > 0 {
		d.hub.Publish(w, seconds(p.End), p.Events)
		d.tokens.published(p.Events)
	}
	if d.fpm != nil && w < len(d.fpmBase) {
		d.forwardPass(w, p)
	}
	d.gauges(w)
}

// forwardPass publishes the forward-pass metrics of each rank of worker w
// whose pass p computed something; as upstream's InstrumentedScheduler, a
// pass that scheduled nothing sends no message (heartbeats cover idle
// ranks). The message leaves when the driver reaches the pass end on the
// wall clock; wall_time is the pass's length in the deployment's seconds,
// the clock of the Prometheus histograms (equal to wall seconds at
// --speedup 1).
func (d *driver) forwardPass(w int, p *engine.Pass) {
	now := time.Now()
	for _, rp := range d.live.Worker(w).RankPasses(p) {
		f := rp.Pass.FPM
		if f.PrefillRequests == 0 && f.DecodeRequests == 0 {
			continue
		}
		d.fpm.Pass(d.fpmBase[w]+rp.Rank, now, fpm.FromEngine(f))
	}
}

// gauges sets worker w's gauges to its ranks' load.
func (d *driver) gauges(w int) {
	for len(d.seen) <= w {
		d.seen = append(d.seen, nil)
	}
	ranks := d.live.Worker(w).Ranks
	if len(d.seen[w]) < len(ranks) {
		d.seen[w] = make([]seen, len(ranks))
	}
	for r, rk := range ranks {
		m := rk.Metrics()
		usage := 0.0
		if m.TotalBlocks > 0 {
			usage = float64(m.ActiveBlocks) / float64(m.TotalBlocks)
		}
		d.met.SetLoad(w, r, m.Running, m.Waiting, usage)
		was := &d.seen[w][r]
		if n := m.Preemptions - was.preemptions; n > 0 {
			d.met.Preempted(w, r, n)
			was.preemptions = m.Preemptions
		}
		if k := d.live.Engine.Spec.NextN; k > 0 && m.DecodeForwards > was.forwards {
			// Each request-forward proposed k drafts and emitted 1 + the
			// accepted ones (issue 30 item 4: vLLM's spec_decode counters).
			f, emitted := m.DecodeForwards-was.forwards, m.AcceptedTokens-was.emitted
			d.met.SpecDecode(w, r, f, f*k, emitted-f)
			was.forwards, was.emitted = m.DecodeForwards, m.AcceptedTokens
		}
	}
}

// seen is what a rank's cumulative counters were when last exported.
type seen struct{ preemptions, forwards, emitted int }

// Routed implements replay.Observer: a disaggregated request streams from
// its decode worker, routed last.
func (d *driver) Routed(id uint64, _ replay.Role, w, r int, _ timing.Time, _ int) {
	if s := d.streams[id]; s != nil {
		s.worker, s.rank = w, r
	}
}

// Admitted implements replay.Observer: a request's first admission (a
// decode side's is not the request's).
func (d *driver) Admitted(id uint64, role replay.Role, at timing.Time, reused int, again bool) {
	s := d.streams[id]
	if s == nil || s.wasAdmitted || role == replay.Decode || again {
		return
	}
	s.wasAdmitted, s.admitted = true, at
	d.waiting.Add(-1)
	s.held.free()
	d.met.PrefixQuery(s.worker, s.rank, s.promptLen, reused)
	s.mu.Lock()
	s.cached = reused
	s.mu.Unlock()
}

// Token implements replay.Observer.
func (d *driver) Token(id uint64, _, at timing.Time, tok uint32) {
	s := d.streams[id]
	if s == nil {
		return
	}
	if s.generated == 0 {
		s.first = at
		d.met.FirstToken(s.worker, s.rank, seconds(at-s.arrival), seconds(s.admitted-s.arrival), seconds(at-s.admitted))
	} else {
		d.met.Token(s.worker, s.rank, seconds(at-s.last))
	}
	s.generated++
	s.last = at
	d.tokens.add(&s.hashes, tok)
	s.mu.Lock()
	s.toks = append(s.toks, tok)
	s.mu.Unlock()
	s.signal()
}

// Terminal implements replay.Observer.
func (d *driver) Terminal(id uint64, at timing.Time, reason string) {
	s := d.streams[id]
	if s == nil {
		return
	}
	delete(d.streams, id)
	if len(s.hashes.blocks) > 0 {
		d.ended = append(d.ended, s.hashes.blocks)
	}
	s.hashes = seqHashes{}
	if !s.wasAdmitted {
		d.waiting.Add(-1)
		s.held.free()
	}
	if s.worker >= 0 {
		fr := "length" // no end-of-sequence token: every request runs to max_tokens
		switch {
		case reason == replay.Aborted:
			fr = "abort"
		case reason != "":
			fr = "error"
		}
		r := metrics.Request{Prompt: s.promptLen, Generated: s.generated, MaxTokens: s.maxTokens,
			E2E: seconds(at - s.arrival), Reason: fr}
		if s.generated > 0 {
			r.Decode = seconds(s.last - s.first)
		}
		if s.wasAdmitted {
			r.Inference = seconds(at - s.admitted)
		}
		d.met.Finished(s.worker, s.rank, r)
	}
	if reason == replay.Aborted && s.worker >= 0 {
		d.gauges(s.worker) // no pass may follow to show the freed KV
	}
	s.mu.Lock()
	s.ended, s.reason = true, reason
	s.mu.Unlock()
	s.signal()
}

// Worker implements replay.Observer: a worker the planner adds has its
// series from the start, as the initial ones do.
func (d *driver) Worker(w, _ int, c replay.WorkerChange, _ timing.Time) {
	if c == replay.ChangeAdded && w < d.live.Workers() {
		d.met.Init(w, len(d.live.Worker(w).Ranks))
	}
}

// roleName is a pool role's worker_type label value.
func roleName(r replay.Role) string {
	switch r {
	case replay.Prefill:
		return "prefill"
	case replay.Decode:
		return "decode"
	}
	return "both"
}

var _ replay.Observer = (*driver)(nil)

// submit hands s to the driver, unless the waiting queue is full (then
// false: the handler answers 429).
func (d *driver) submit(ctx context.Context, s *stream, maxWaiting int) (bool, error) {
	if d.waiting.Add(1) > int64(maxWaiting) {
		d.waiting.Add(-1)
		return false, nil
	}
	select {
	case d.cmds <- command{s: s}:
		return true, nil
	case <-d.done:
		d.waiting.Add(-1)
		return false, fmt.Errorf("live: %w", errShutdown)
	case <-ctx.Done():
		d.waiting.Add(-1)
		return false, ctx.Err()
	}
}

// abort tells the driver s's client went away.
func (d *driver) abort(s *stream) {
	select {
	case d.cmds <- command{s: s, abort: true}:
	case <-d.done:
	}
}
