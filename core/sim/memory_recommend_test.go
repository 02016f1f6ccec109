package sim_test

import (
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/core/recommend"
	"github.com/dynosim/dynosim-web/core/sim"
)

// Issue 29 item 9: a search over replicas meets the same memory check per
// candidate: the candidate past the budget is infeasible, with the check's
// message as its reason, and the search goes on (it ran out of memory).
func TestItem9RecommendSweepOverReplicasRefusesPerCandidate(t *testing.T) {
	const text = `
traffic: {stop: {requests: 20}}
engine:
  workers:
    aggregated:
      parallelism: {replicas: {choices: [2, 4096]}, attention_data: 256}
      timing: {type: polynomial}
optimization: {target: throughput, constraints: {max_candidate_gpus: 1048576}}
`
	sp, err := recommend.Parse("r.yaml", []byte(text), nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := sim.PrepareSweep(sim.Inputs{Config: sp.Base, ConfigName: "r.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	l, err := recommend.Search(sp, p, recommend.Local{P: p}, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Candidates) != 2 {
		t.Fatalf("%d candidates, want 2", len(l.Candidates))
	}
	for _, e := range l.Candidates {
		replicas := e.Config["engine.workers.aggregated.parallelism.replicas"]
		switch replicas {
		case "2":
			if e.Status != recommend.Feasible {
				t.Errorf("2 replicas: %s (%s)", e.Status, e.Reason)
			}
		case "4096":
			if e.Status != recommend.Infeasible || e.ReasonCategory != recommend.ReasonTopology ||
				!strings.Contains(e.Reason, "4096 workers × 256 ranks = 1048576 engine cores") {
				t.Errorf("4096 replicas: %s, %s: %s", e.Status, e.ReasonCategory, e.Reason)
			}
		default:
			t.Errorf("candidate with replicas %q", replicas)
		}
	}
}
