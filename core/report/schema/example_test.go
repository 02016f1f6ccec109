package schema_test

import (
	"encoding/json"
	"fmt"

	"github.com/dynosim/dynosim-web/core/report/schema"
)

// A consumer reads a report through the schema's names, never by string
// literal: scalars by constant, distributions by family and statistic,
// sections by their fixed-shape types.
func Example() {
	reportJSON := []byte(`{
	  "summary": {"completed_requests": 3, "p99_ttft_ms": 41.5, "wall_time_ms": 12},
	  "outcomes": {"completed": 3, "rejected": 0, "rejected_by_reason": {}, "unfinished": 0, "stop_reason": "drained"}
	}`)
	var r struct {
		Summary  map[string]float64 `json:"summary"`
		Outcomes schema.Outcomes    `json:"outcomes"`
	}
	if err := json.Unmarshal(reportJSON, &r); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(schema.TTFT.Key(schema.P99), r.Summary[schema.TTFT.Key(schema.P99)])
	fmt.Println(schema.CompletedRequests, r.Summary[schema.CompletedRequests], r.Outcomes.StopReason)
	for k := range r.Summary {
		if schema.IsWallClock(k) {
			fmt.Println("machine-dependent:", k)
		}
	}
	fmt.Println(len(schema.SummaryKeys()), "summary keys")
	// Output:
	// p99_ttft_ms 41.5
	// completed_requests 3 drained
	// machine-dependent: wall_time_ms
	// 106 summary keys
}
