package engine

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/core/workload"
	"github.com/dynosim/dynosim-web/timing"
)

// Issue 30 item 8: vLLM's --scheduling-policy priority
// (vllm/v1/core/sched/request_queue.py PriorityRequestQueue,
// vllm/v1/core/sched/scheduler.py): the waiting queue runs lower
// (priority, arrival) first, a preempted request goes back by that key,
// and the preemption victim is the running request with the largest key.
// Under fcfs (the default) the same requests keep arrival order and the
// newest running request is the victim.
func TestItem30_8PriorityScheduling(t *testing.T) {
	for _, tc := range []struct {
		priority bool
		admitted []uint64 // first admissions, in order
		victim   uint64   // the first request preempted
	}{
		{false, []uint64{9, 1, 2, 3, 4}, 6},
		{true, []uint64{9, 2, 4, 1, 3}, 5},
	} {
		t.Run(fmt.Sprintf("priority=%v", tc.priority), func(t *testing.T) {
			// Admission: one sequence at a time; request 9 runs while
			// 1..4 (priorities 10, 0, 10, 0) wait.
			cfg := cfg4(64, 16, 1, false)
			cfg.PriorityScheduling = tc.priority
			c := mustCore(t, cfg)
			if err := c.Submit(Request{ID: 9, Prompt: span(0, 8), MaxOutput: 2}); err != nil {
				t.Fatal(err)
			}
			d := driver{c: c}
			d.step()
			for i, p := range []int32{10, 0, 10, 0} {
				id := uint64(i + 1)
				if err := c.Submit(Request{ID: id, Prompt: span(uint32(100*id), uint32(100*id+8)), MaxOutput: 2, Priority: p}); err != nil {
					t.Fatal(err)
				}
			}
			got := []uint64{9}
			for _, p := range d.drain(t, 100) {
				for _, a := range p.Admissions {
					if !a.Again {
						got = append(got, a.ID)
					}
				}
			}
			if !slices.Equal(got, tc.admitted) {
				t.Errorf("admitted %v, want %v", got, tc.admitted)
			}

			// Preemption: 5 (priority 5, older) and 6 (priority 0) outgrow
			// a 6-block pool; fcfs preempts the newest, priority the
			// largest (priority, arrival).
			cfg = cfg4(6, 16, 2, false)
			cfg.PriorityScheduling = tc.priority
			c = mustCore(t, cfg)
			for _, r := range []Request{{ID: 5, Prompt: span(0, 8), MaxOutput: 8, Priority: 5}, {ID: 6, Prompt: span(100, 108), MaxOutput: 8}} {
				if err := c.Submit(r); err != nil {
					t.Fatal(err)
				}
			}
			d = driver{c: c}
			for i := 0; c.preemptions == 0; i++ {
				if i == 20 {
					t.Fatal("no preemption")
				}
				d.step()
			}
			if s, _ := c.State(tc.victim); !s.Preempted {
				t.Errorf("request %d not preempted: %+v", tc.victim, s)
			}
			d.drain(t, 100)
		})
	}
}

// twoClassTrace is a Mooncake trace of n requests arriving every gap ms,
// prompt 512 tokens (one unique hash block each), 64 output tokens, the
// even ones priority 0 and the odd ones priority 10.
func twoClassTrace(n int, gap float64) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"timestamp": %g, "input_length": 512, "output_length": 64, "hash_ids": [%d], "priority": %d}`+"\n", float64(i)*gap, i, 10*(i%2))
	}
	return b.String()
}

// classTTFT replays wl's turns (one per session) on one vLLM core and
// returns the mean TTFT in ms of the priority-0 and priority-10 classes.
func classTTFT(t *testing.T, wl *workload.Workload, priority bool) (hi, lo float64) {
	t.Helper()
	cfg := Config{BlockSize: 16, NumBlocks: 1 << 14, MaxBatchedTokens: 2048, MaxSeqs: 16,
		ChunkedPrefill: true, Model: timing.Polynomial{}, PriorityScheduling: priority}
	c := mustCore(t, cfg)
	var prompt []uint32
	arrival := make([]timing.Time, len(wl.ByStart)+1)
	first := make([]bool, len(arrival))
	var sum [2]float64
	var cnt [2]int
	now, next := timing.Time(0), 0
	for next < len(wl.ByStart) || !c.Empty() {
		for next < len(wl.ByStart) && wl.Sessions[wl.ByStart[next]].Start <= now {
			s := &wl.Sessions[wl.ByStart[next]]
			tr := &s.Turns[0]
			id := uint64(next + 1)
			arrival[id] = s.Start
			prompt = wl.Prompt(prompt[:0], tr)
			if err := c.Submit(Request{ID: id, Prompt: prompt, MaxOutput: tr.Output, Priority: tr.Priority}); err != nil {
				t.Fatal(err)
			}
			next++
		}
		if c.Empty() {
			now = wl.Sessions[wl.ByStart[next]].Start
			continue
		}
		p := c.Step(now)
		for _, s := range p.Signals {
			if s.HasToken && !first[s.ID] {
				first[s.ID] = true
				k := 0
				if wl.Sessions[wl.ByStart[s.ID-1]].Turns[0].Priority != 0 {
					k = 1
				}
				sum[k] += (p.End - arrival[s.ID]).Ms()
				cnt[k]++
			}
		}
		now = max(p.End, now+timing.FromMs(1))
	}
	if cnt[0]+cnt[1] != len(wl.ByStart) {
		t.Fatalf("%d first tokens, want %d", cnt[0]+cnt[1], len(wl.ByStart))
	}
	return sum[0] / float64(cnt[0]), sum[1] / float64(cnt[1])
}

// Issue 30 item 8 on a two-class trace under load: half the requests
// priority 0, half priority 10, arriving faster than one vLLM core serves
// them. Under fcfs both classes wait alike; under priority the
// priority-0 class goes first and its mean TTFT drops well below the
// other's.
func TestItem30_8TwoClassTraceTTFT(t *testing.T) {
	wl, err := workload.ReadMooncake("two_class.jsonl", []byte(twoClassTrace(400, 20)), 512)
	if err != nil {
		t.Fatal(err)
	}
	if wl.Priorities != 200 {
		t.Fatalf("trace priorities %d, want 200", wl.Priorities)
	}
	for _, tc := range []struct {
		priority       bool
		minGap, maxGap float64 // bounds on mean TTFT(priority 10) / mean TTFT(priority 0)
	}{
		{false, 0.8, 1.25},
		{true, 3, 1e9},
	} {
		t.Run(fmt.Sprintf("priority=%v", tc.priority), func(t *testing.T) {
			hi, lo := classTTFT(t, wl, tc.priority)
			t.Logf("mean TTFT: priority 0 %.1f ms, priority 10 %.1f ms (ratio %.2f)", hi, lo, lo/hi)
			if r := lo / hi; r < tc.minGap || r > tc.maxGap {
				t.Errorf("TTFT ratio %.2f (priority 0 %.1f ms, priority 10 %.1f ms), want in [%v, %v]", r, hi, lo, tc.minGap, tc.maxGap)
			}
		})
	}
}
