package workload

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// priorities reads the row's priority, strict_priority and policy_class
// into t (issue 30 item 8). The types are Dynamo's (spec §1.1: priority
// i32, strict_priority u32, policy_class an optional string); a value
// outside them is refused, naming the file and line, rather than clipped.
// policy_class (Dynamo's router classes, served by deficit round robin) is
// not modelled: it is counted, so that the report says so.
func (m *mooncakeReader) priorities(t *Turn) error {
	r, w := &m.r, m.w
	if p, err := intRange(r.Priority, math.MinInt32, math.MaxInt32); err != nil {
		return m.fail("priority: %v", err)
	} else if p != 0 {
		t.Priority = int32(p)
		w.Priorities++
	}
	if p, err := intRange(r.StrictPriority, 0, math.MaxUint32); err != nil {
		return m.fail("strict_priority: %v", err)
	} else if p != 0 {
		t.StrictPriority = uint32(p)
		w.Stricts++
	}
	if c := r.PolicyClass; len(c) > 0 && string(c) != "null" {
		var s string
		if err := json.Unmarshal(c, &s); err != nil {
			return m.fail("policy_class: must be a string, got %s", clip(string(c)))
		}
		w.Classes++
	}
	return nil
}

// intRange parses an optional JSON integer in [lo, hi]; absent or null is 0.
func intRange(raw json.RawMessage, lo, hi int64) (int64, error) {
	n, err := number(raw)
	if err != nil || n == "" {
		return 0, err
	}
	v, err := strconv.ParseInt(n.String(), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("must be an integer in [%d, %d], got %s", lo, hi, clip(n.String()))
	}
	if v < lo || v > hi {
		return 0, fmt.Errorf("must be an integer in [%d, %d], got %s", lo, hi, n)
	}
	return v, nil
}
