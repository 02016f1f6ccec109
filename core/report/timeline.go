package report

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/dynosim/dynosim-web/core/report/schema"
	"github.com/dynosim/dynosim-web/timing"
)

// One request's life, captured on demand: the replay is deterministic, so
// a front end that wants the timeline of request k runs the same inputs
// again watching k. Only that request's events are kept, so memory is
// bounded by its own passes and a run that watches nothing keeps none.

// Timeline is the report's request_timeline section.
type Timeline struct {
	UUID   uint64          `json:"uuid"`
	Events []TimelineEvent `json:"events"`
}

// TimelineEvent is one step of the watched request's life. Fields that do
// not apply to the event are left out.
type TimelineEvent struct {
	TMs           float64  `json:"t_ms"`
	Event         string   `json:"event"` // arrival | routed | admitted | pass | preempted | first_token | prefill_done | kv_transfer | completed | rejected
	Pool          string   `json:"pool,omitempty"`
	Worker        *int     `json:"worker,omitempty"`
	DPRank        *int     `json:"dp_rank,omitempty"`
	EndMs         *float64 `json:"end_ms,omitempty"`
	PassMs        *float64 `json:"pass_ms,omitempty"`
	BatchRequests int      `json:"batch_requests,omitempty"` // requests the pass computed for
	PrefillTokens int      `json:"prefill_tokens,omitempty"` // tokens it computed as a prefill chunk
	DecodeTokens  int      `json:"decode_tokens,omitempty"`  // tokens it computed as decode steps
	Tokens        int      `json:"tokens,omitempty"`         // tokens emitted (pass) or moved (kv_transfer)
	Bytes         float64  `json:"bytes,omitempty"`
	OverlapTokens *int     `json:"overlap_tokens,omitempty"` // the router's cached-prefix estimate
	ReusedTokens  *int     `json:"reused_tokens,omitempty"`  // prompt tokens served from the prefix cache
	InputLength   int      `json:"input_length,omitempty"`
	OutputLength  int      `json:"output_length,omitempty"`
	Reason        string   `json:"reason,omitempty"`

	At, End timing.Time `json:"-"` // the event's time and, for spans, its end
}

// Watch makes the collector record request id's timeline (0: none).
func (c *Collector) Watch(id uint64) { c.watch = id }

// Watching is the request whose timeline is recorded (0: none).
func (c *Collector) Watching() uint64 { return c.watch }

// event appends one event of the watched request.
func (c *Collector) event(e TimelineEvent) { c.timeline = append(c.timeline, e) }

// WatchedPass records a pass that computed, or preempted, the watched
// request: e carries At (pass start), End, Worker and the pass's figures.
func (c *Collector) WatchedPass(e TimelineEvent) {
	if e.Event == "" {
		e.Event = schema.EventPass
	}
	c.event(e)
}

// Timeline renders the watched request's events in time order (a
// pass's admission before the pass; the loop records a pass at its end),
// naming each worker's pool.
func (c *Collector) Timeline(pools []PoolInfo) (*Timeline, error) {
	if c.watch == 0 {
		return nil, nil
	}
	if c.watch > uint64(len(c.recs)) {
		return nil, fmt.Errorf("timeline: request %d does not exist: the run has %d requests (uuid 1 to %d)", c.watch, len(c.recs), len(c.recs))
	}
	evs := slices.Clone(c.timeline)
	slices.SortStableFunc(evs, func(a, b TimelineEvent) int { return cmp.Compare(a.At, b.At) })
	for i := range evs {
		e := &evs[i]
		e.TMs = e.At.Ms()
		if e.End > 0 || e.Event == schema.EventPass || e.Event == schema.EventKVTransfer {
			end, d := e.End.Ms(), (e.End - e.At).Ms()
			e.EndMs = &end
			if e.Event == schema.EventPass {
				e.PassMs = &d
			}
		}
		if e.Worker != nil {
			e.Pool = poolOf(pools, *e.Worker)
		}
	}
	return &Timeline{UUID: c.watch, Events: evs}, nil
}

// poolOf names the pool of global worker w (pools are numbered in order).
func poolOf(pools []PoolInfo, w int) string {
	for _, p := range pools {
		if w < p.Workers {
			return p.Name
		}
		w -= p.Workers
	}
	return ""
}

// tableTimeline writes the watched request's life for the console, a line
// per event; consecutive decode passes share one line.
func (r *Report) tableTimeline(b *strings.Builder) {
	tl := r.Timeline
	if tl == nil {
		return
	}
	fmt.Fprintf(b, "Request %d timeline (ms):\n", tl.UUID)
	ev := tl.Events
	for i := 0; i < len(ev); i++ {
		e := ev[i]
		switch e.Event {
		case schema.EventPass:
			if e.PrefillTokens == 0 {
				j := i
				for j+1 < len(ev) && ev[j+1].Event == schema.EventPass && ev[j+1].PrefillTokens == 0 {
					j++
				}
				if j > i {
					tokens := 0
					for _, d := range ev[i : j+1] {
						tokens += d.Tokens
					}
					fmt.Fprintf(b, "  %10.3f  %d decode passes to %.3f on worker %d, %d tokens\n", e.TMs, j-i+1, *ev[j].EndMs, *e.Worker, tokens)
					i = j
					continue
				}
			}
			fmt.Fprintf(b, "  %10.3f  pass on worker %d: %.3f ms, batch %d, %d prefill + %d decode tokens computed, %d emitted\n",
				e.TMs, *e.Worker, *e.PassMs, e.BatchRequests, e.PrefillTokens, e.DecodeTokens, e.Tokens)
		case schema.EventArrival:
			fmt.Fprintf(b, "  %10.3f  arrival: %d input tokens, %d requested\n", e.TMs, e.InputLength, e.OutputLength)
		case schema.EventRouted:
			fmt.Fprintf(b, "  %10.3f  routed to %s worker %d rank %d\n", e.TMs, e.Pool, *e.Worker, *e.DPRank)
		case schema.EventAdmitted:
			fmt.Fprintf(b, "  %10.3f  admitted, %d prompt tokens cached\n", e.TMs, *e.ReusedTokens)
		case schema.EventKVTransfer:
			fmt.Fprintf(b, "  %10.3f  KV transfer of %d tokens to %.3f\n", e.TMs, e.Tokens, *e.EndMs)
		case schema.EventCompleted:
			fmt.Fprintf(b, "  %10.3f  completed with %d tokens\n", e.TMs, e.OutputLength)
		case schema.EventRejected:
			fmt.Fprintf(b, "  %10.3f  rejected: %s\n", e.TMs, e.Reason)
		default:
			fmt.Fprintf(b, "  %10.3f  %s\n", e.TMs, strings.ReplaceAll(e.Event, "_", " "))
		}
	}
}
