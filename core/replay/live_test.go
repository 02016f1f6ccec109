package replay

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/dynosim/dynosim-web/core/engine"
	"github.com/dynosim/dynosim-web/core/router"
	"github.com/dynosim/dynosim-web/timing"
)

// tape is an Observer that records what it hears.
type tape struct {
	NopObserver
	first, last map[uint64]timing.Time
	tokens      map[uint64]int
	done        map[uint64]string
	routed      map[uint64]int
	reused      map[uint64]int
	passes      int
}

func newTape() *tape {
	return &tape{first: map[uint64]timing.Time{}, last: map[uint64]timing.Time{}, tokens: map[uint64]int{},
		done: map[uint64]string{}, routed: map[uint64]int{}, reused: map[uint64]int{}}
}

func (t *tape) PassEnded(int, *engine.Pass)                              { t.passes++ }
func (t *tape) Routed(id uint64, _ Role, w, _ int, _ timing.Time, _ int) { t.routed[id] = w }
func (t *tape) Terminal(id uint64, _ timing.Time, why string)            { t.done[id] = why }

// Admitted keeps a request's first admission's reuse (a decode side's
// is not the request's).
func (t *tape) Admitted(id uint64, role Role, _ timing.Time, n int, again bool) {
	if role != Decode && !again {
		t.reused[id] = n
	}
}

func (t *tape) Token(id uint64, _, at timing.Time, _ uint32) {
	if t.tokens[id] == 0 {
		t.first[id] = at
	}
	t.tokens[id]++
	t.last[id] = at
}

const liveTrace = `{"timestamp":0,"input_length":96,"output_length":12,"hash_ids":[1,2,3]}
{"timestamp":5,"input_length":64,"output_length":20,"hash_ids":[1,2]}
{"timestamp":7,"input_length":200,"output_length":5,"hash_ids":[9,10,11,12,13,14,15]}
{"timestamp":80,"input_length":40,"output_length":9,"hash_ids":[20,21]}`

// A live loop fed the trace's requests at their arrival times, stepped to
// each time as a wall-clock driver would, emits every token at the time
// the offline replay of the same trace records: one core, two drivers.
func TestLiveMatchesReplay(t *testing.T) {
	cfg := engine.Config{BlockSize: 16, NumBlocks: 256, MaxBatchedTokens: 128, ChunkedPrefill: true, PrefixCaching: true, Events: true, Model: timing.Polynomial{}}
	wl := trace(t, liveTrace, 32)
	rep, err := Run(wl, agg(workers(t, 2, cfg)), Options{Capture: true})
	if err != nil {
		t.Fatal(err)
	}
	tp := newTape()
	l, err := New(nil, []Pool{{Name: "aggregated", Workers: workers(t, 2, cfg), Router: router.NewRoundRobin(), GPUs: 1}}, Options{Live: true, Observer: tp})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range wl.Sessions { // in file order, which is arrival order here
		if _, err := l.RunUntil(s.Start); err != nil {
			t.Fatal(err)
		}
		if l.Now() != s.Start {
			t.Fatalf("clock at %v, want %v", l.Now(), s.Start)
		}
		if _, err := l.Submit(wl.Prompt(nil, &s.Turns[0]), s.Turns[0].Output, 0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.RunUntil(math.MaxInt64 / 2); err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Requests() {
		id := r.UUID
		if tp.done[id] != "" || tp.tokens[id] != r.OutputLength || tp.first[id].Ms() != *r.FirstTokenMs || tp.last[id].Ms() != *r.LastTokenMs {
			t.Errorf("request %d: live %d tokens %v..%v (%q), replay %d tokens %v..%v", id, tp.tokens[id], tp.first[id].Ms(), tp.last[id].Ms(), tp.done[id], r.OutputLength, *r.FirstTokenMs, *r.LastTokenMs)
		}
		if tp.routed[id] != *r.Worker || tp.reused[id] != r.ReusedInputTokens {
			t.Errorf("request %d: live on worker %d reusing %d, replay %d reusing %d", id, tp.routed[id], tp.reused[id], *r.Worker, r.ReusedInputTokens)
		}
	}
	if l.reqs.len() != 0 || l.reqs.base != 4 {
		t.Errorf("a drained live loop keeps %d requests (base %d)", l.reqs.len(), l.reqs.base)
	}
}

// A client that goes away frees its request's KV: at once when the worker
// is idle, after the pass in flight otherwise; nothing follows the abort.
func TestLiveAbort(t *testing.T) {
	cfg := engine.Config{BlockSize: 16, NumBlocks: 64, MaxBatchedTokens: 64, ChunkedPrefill: true, Model: timing.Polynomial{}}
	for _, tc := range []struct {
		name  string
		after timing.Time // when the abort comes
	}{
		{"waiting", 0},
		{"mid-prefill", timing.FromMs(0.001)},
		{"decoding", timing.FromMs(1000)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tp := newTape()
			ws := workers(t, 1, cfg)
			l, err := New(nil, agg(ws), Options{Live: true, Observer: tp})
			if err != nil {
				t.Fatal(err)
			}
			prompt := make([]uint32, 300)
			for i := range prompt {
				prompt[i] = uint32(i + 1)
			}
			id, _ := l.Submit(prompt, 1000, 0)
			if _, err := l.RunUntil(tc.after); err != nil {
				t.Fatal(err)
			}
			seen := tp.tokens[id]
			if !l.Abort(id) || l.Abort(id) {
				t.Fatal("Abort: want true once, then false")
			}
			if _, err := l.RunUntil(timing.FromMs(10_000)); err != nil {
				t.Fatal(err)
			}
			m := ws[0].Metrics()
			if tp.done[id] != Aborted || m.ActiveBlocks != 0 || m.Running+m.Waiting != 0 || !ws[0].Empty() {
				t.Fatalf("after abort: done %q, %+v", tp.done[id], m)
			}
			if tc.after > timing.FromMs(1) && seen == 0 {
				t.Fatalf("no token before the abort at %v", tc.after)
			}
			if n := tp.tokens[id]; n > seen+1 { // at most the pass in flight's token
				t.Fatalf("%d tokens after the abort", n-seen)
			}
			if l.reqs.len() != 0 {
				t.Fatalf("an aborted request is kept")
			}
		})
	}
}

// Memory follows the requests in flight: after thousands of requests the
// loop and its collector keep none of those that ended.
func TestLiveForgets(t *testing.T) {
	cfg := engine.Config{BlockSize: 16, NumBlocks: 256, PrefixCaching: true, Model: timing.Polynomial{}}
	tp := newTape()
	l, err := New(nil, agg(workers(t, 2, cfg)), Options{Live: true, Observer: tp})
	if err != nil {
		t.Fatal(err)
	}
	prompt := make([]uint32, 50)
	at := timing.Time(0)
	for i := range 5000 {
		prompt[0] = uint32(i) // unique prompts
		if _, err := l.Submit(prompt, 3, 0); err != nil {
			t.Fatal(err)
		}
		at += timing.FromMs(100)
		if _, err := l.RunUntil(at); err != nil {
			t.Fatal(err)
		}
		if l.reqs.len() > 50 {
			t.Fatalf("request %d: the loop keeps %d requests", i, l.reqs.len())
		}
	}
	if len(tp.done) != 5000 {
		t.Fatalf("%d of 5000 ended", len(tp.done))
	}
}

// Disaggregated serving is live too: every handoff path (bootstrap,
// vLLM and SGLang orders; direct) emits each token when the replay does,
// and an abort waits for the decode copy, then frees it there.
func TestLiveDisaggregated(t *testing.T) {
	for _, c := range []pd{
		{policy: engine.VLLM, prefill: 1, decode: 2, pBlocks: 64, dBlocks: 64, delay: true},
		{policy: engine.SGLang, prefill: 2, decode: 1, pBlocks: 64, dBlocks: 128, delay: true},
		{policy: engine.VLLM, prefill: 1, decode: 1, pBlocks: 64, dBlocks: 64, direct: true, fullPrompt: true, delay: true},
	} {
		t.Run(fmt.Sprintf("%v/direct=%v", c.policy, c.direct), func(t *testing.T) {
			rep := c.run(t, liveTrace)
			pools, x := c.build(t)
			tp := newTape()
			l, err := New(nil, pools, Options{Live: true, Observer: tp, Transfer: x})
			if err != nil {
				t.Fatal(err)
			}
			wl := trace(t, liveTrace, 4)
			for _, s := range wl.Sessions {
				if _, err := l.RunUntil(s.Start); err != nil {
					t.Fatal(err)
				}
				if _, err := l.Submit(wl.Prompt(nil, &s.Turns[0]), s.Turns[0].Output, 0); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := l.RunUntil(timing.FromMs(1e6)); err != nil {
				t.Fatal(err)
			}
			for _, r := range rep.Requests() {
				id := r.UUID
				if tp.done[id] != "" || tp.tokens[id] != r.OutputLength || tp.first[id].Ms() != *r.FirstTokenMs || tp.last[id].Ms() != *r.LastTokenMs {
					t.Errorf("request %d: live %d tokens %v..%v (%q), replay %d tokens %v..%v", id, tp.tokens[id], tp.first[id].Ms(), tp.last[id].Ms(), tp.done[id], r.OutputLength, *r.FirstTokenMs, *r.LastTokenMs)
				}
				if tp.routed[id] != *r.Worker {
					t.Errorf("request %d: live on decode worker %d, replay %d", id, tp.routed[id], *r.Worker)
				}
			}
			// A long request aborted while it prefills ends on its decode
			// worker, which is then empty.
			prompt := make([]uint32, 120)
			for i := range prompt {
				prompt[i] = uint32(900 + i)
			}
			now := l.Now()
			id, _ := l.Submit(prompt, 5000, 0)
			if _, err := l.RunUntil(now + timing.FromMs(0.5)); err != nil {
				t.Fatal(err)
			}
			if !l.Abort(id) {
				t.Fatal("Abort: not live")
			}
			if _, err := l.RunUntil(now + timing.FromMs(100_000)); err != nil {
				t.Fatal(err)
			}
			if tp.done[id] != Aborted || tp.tokens[id] > 2 || l.reqs.len() != 0 {
				t.Fatalf("after the abort: %q with %d tokens, %d requests kept", tp.done[id], tp.tokens[id], l.reqs.len())
			}
			for _, p := range pools {
				for i, w := range p.Workers {
					if m := w.Metrics(); m.Holds != 0 || m.Reserved != 0 || m.Running != 0 || m.Waiting != 0 || c.policy != engine.SGLang && m.ActiveBlocks != 0 {
						t.Fatalf("%s worker %d ends with %+v", p.Name, i, m)
					}
				}
			}
		})
	}
}

// Issue 30 item 8: a live request's priority (vLLM's `priority` request
// field) reaches the engine: on one sequence slot, three requests waiting
// behind a running one start lowest priority first under priority
// scheduling, in arrival order under fcfs.
func TestItem30_8LivePriority(t *testing.T) {
	for _, tc := range []struct {
		name     string
		priority bool
		want     []uint64 // the order the waiting requests' first tokens come in
	}{
		{"fcfs", false, []uint64{2, 3, 4}},
		{"priority", true, []uint64{4, 2, 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := engine.Config{BlockSize: 16, NumBlocks: 256, MaxSeqs: 1, Model: timing.Polynomial{}, PriorityScheduling: tc.priority}
			tp := newTape()
			l, err := New(nil, agg(workers(t, 1, cfg)), Options{Live: true, Observer: tp})
			if err != nil {
				t.Fatal(err)
			}
			prompt := make([]uint32, 32)
			for i, p := range []int32{0, 5, 7, 1} { // ids 1..4
				prompt[0] = uint32(i)
				if _, err := l.Submit(prompt, 4, p); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := l.RunUntil(timing.FromMs(1e6)); err != nil {
				t.Fatal(err)
			}
			got := []uint64{2, 3, 4}
			slices.SortFunc(got, func(a, b uint64) int { return cmp.Compare(tp.first[a], tp.first[b]) })
			if !slices.Equal(got, tc.want) {
				t.Errorf("first tokens in order %v, want %v (first: %v)", got, tc.want, tp.first)
			}
		})
	}
}
