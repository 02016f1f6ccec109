package sim

import (
	"bytes"
	"fmt"
	"sync"
	"testing"

	"github.com/dynosim/dynosim-web/core/report/schema"
)

// Sixteen concurrent runs of one prepared input, each with its own
// override, give the same bytes as sixteen separate Predict calls (run
// under -race by make test-race).
func TestPreparedConcurrentRunsEqualPredict(t *testing.T) {
	trace := testTrace(t)
	in := Inputs{Config: []byte(golden4), Trace: trace, TraceName: "conversation_400.jsonl", CapturePerRequest: true}
	const n = 16
	overrides := make([][]string, n)
	for i := range overrides {
		// Vary what a recommend trial varies: replicas, the arrival
		// speedup, the seed and the router.
		overrides[i] = []string{
			fmt.Sprintf("engine.workers.aggregated.parallelism.replicas=%d", 1+i%4),
			fmt.Sprintf("traffic.load.speedup=%d", 1+i%3),
			fmt.Sprintf("execution.seed=%d", i),
			"router.policy=" + []string{"round_robin", "random"}[i%2],
		}
		if i == n-1 {
			overrides[i] = nil // the prepared config itself
		}
	}
	want := make([][]byte, n)
	for i, o := range overrides {
		one := in
		one.Sets = o
		rep, err := Predict(one, nil)
		if err != nil {
			t.Fatal(err)
		}
		js, _ := rep.JSON()
		want[i] = append(js, rep.RequestsJSONL()...)
	}
	p, err := Prepare(in)
	if err != nil {
		t.Fatal(err)
	}
	got := make([][]byte, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			rep, err := p.Run(overrides[i], nil)
			if err == nil {
				got[i], err = rep.JSON()
				got[i] = append(got[i], rep.RequestsJSONL()...)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	distinct := map[string]bool{}
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("run %d: %v", i, errs[i])
		}
		if !bytes.Equal(got[i], want[i]) {
			t.Errorf("run %d (%v) differs from Predict", i, overrides[i])
		}
		distinct[string(want[i])] = true
	}
	if len(distinct) < n/2 {
		t.Errorf("only %d distinct reports: the overrides do not reach the runs", len(distinct))
	}
}

// A prepared input rejects a bad override with the override's path, and a
// trace-source override loads its own workload.
func TestPreparedOverrides(t *testing.T) {
	p, err := Prepare(Inputs{Config: []byte("traffic: {source: {type: synthetic, input_tokens: 64, output_tokens: 4}, stop: {requests: 8}}")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Run([]string{"engine.workers.aggregated.parallelism.replicas=0"}, nil); err == nil || !bytes.Contains([]byte(err.Error()), []byte("engine.workers.aggregated.parallelism.replicas")) {
		t.Fatalf("bad override: %v", err)
	}
	rep, err := p.Run([]string{"traffic.stop.requests=20"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := rep.Summary[schema.NumRequests]; got != 20 {
		t.Fatalf("num_requests %v after overriding stop.requests, want 20", got)
	}
	if rep, _ := p.Run(nil, nil); rep.Summary[schema.NumRequests] != 8 {
		t.Fatalf("the prepared input changed: %v requests", rep.Summary[schema.NumRequests])
	}
}

// An error that echoes a huge value is cut to a readable line, and still
// wraps its cause.
func TestErrorsAreClipped(t *testing.T) {
	huge := bytes.Repeat([]byte("x"), 1<<20)
	_, err := Predict(Inputs{Config: append(append([]byte("engine: {hardware: "), huge...), '}')}, nil)
	if err == nil || len(err.Error()) > maxErrorLen+40 || !bytes.Contains([]byte(err.Error()), []byte("more bytes)")) {
		t.Fatalf("error of %d bytes", len(fmt.Sprint(err)))
	}
	// A prepared input's runs clip too (a recommend trial's override).
	p, err := Prepare(Inputs{Config: []byte("traffic: {source: {type: synthetic}, stop: {requests: 2}}")})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Run([]string{"engine.hardware=" + string(huge)}, nil)
	if err == nil || len(err.Error()) > maxErrorLen+40 {
		t.Fatalf("run error of %d bytes", len(fmt.Sprint(err)))
	}
}
