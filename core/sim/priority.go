package sim

import (
	"fmt"

	"github.com/dynosim/dynosim-web/core/config"
	"github.com/dynosim/dynosim-web/core/workload"
)

// priorityWarnings says which of the trace's priority fields the run does
// not model (issue 30 item 8: a field a user set is never ignored in
// silence). priority is modelled by a vLLM pool with scheduler.policy:
// priority and by the KV router's queue; strict_priority by the router
// queue only; policy_class (Dynamo's per-class router queues) not at all.
func priorityWarnings(cfg *config.Config, wl *workload.Workload) []string {
	if wl == nil {
		return nil // live mode: submissions carry no priority
	}
	var out []string
	rt := &cfg.Router
	queue := rt.Policy == "kv_router" && rt.KV.Queue.Threshold > 0
	if n := wl.Priorities; n > 0 {
		for _, r := range roles(cfg) {
			if r.Scheduler.Policy == "priority" {
				continue
			}
			also := "nothing else orders by it (the KV router's queue would: router.kv.queue.threshold > 0)"
			if queue {
				also = "only the KV router's queue orders by it (Dynamo's max(priority, 0) jump)"
			}
			out = append(out, fmt.Sprintf("trace priority (%d requests) not modelled by the %s workers: %s.scheduler.policy is %s (priority models vLLM's --scheduling-policy priority, vllm backend only); %s",
				n, r.name, r.path, r.Scheduler.Policy, also))
		}
	}
	if n := wl.Stricts; n > 0 && !queue {
		out = append(out, fmt.Sprintf("trace strict_priority (%d requests) not modelled: only the KV router's queue orders by it (router.policy: kv_router with router.kv.queue.threshold > 0)", n))
	}
	if n := wl.Classes; n > 0 {
		out = append(out, fmt.Sprintf("trace policy_class (%d requests) not modelled: Dynamo's per-class router queues are not simulated; requests share one queue", n))
	}
	return out
}
