package workload

import (
	"strings"
	"testing"
)

// Issue 30 item 8: a row's priority (i32), strict_priority (u32) and
// policy_class (string) are read, counted for the report, and refused
// outside their types with the file and line named.
func TestItem30_8TracePriorities(t *testing.T) {
	const ok = `{"timestamp":0,"input_length":4,"output_length":1,"hash_ids":[1]}` + "\n"
	for _, tc := range []struct {
		name, field string
		priority    int32
		strict      uint32
		counts      [3]int // Priorities, Stricts, Classes
		err         string
	}{
		{"absent", ``, 0, 0, [3]int{}, ""},
		{"null", `,"priority":null,"strict_priority":null,"policy_class":null`, 0, 0, [3]int{}, ""},
		{"zero", `,"priority":0`, 0, 0, [3]int{}, ""},
		{"negative", `,"priority":-3,"strict_priority":7`, -3, 7, [3]int{1, 1, 0}, ""},
		{"bounds", `,"priority":-2147483648,"strict_priority":4294967295`, -2147483648, 4294967295, [3]int{1, 1, 0}, ""},
		{"class", `,"priority":10,"policy_class":"batch"`, 10, 0, [3]int{1, 0, 1}, ""},
		{"float", `,"priority":1.5`, 0, 0, [3]int{}, "t.jsonl:2: priority: must be an integer in [-2147483648, 2147483647], got 1.5"},
		{"exponent", `,"priority":1e3`, 0, 0, [3]int{}, "t.jsonl:2: priority: must be an integer"},
		{"above i32", `,"priority":2147483648`, 0, 0, [3]int{}, "t.jsonl:2: priority: must be an integer in [-2147483648, 2147483647], got 2147483648"},
		{"string", `,"priority":"high"`, 0, 0, [3]int{}, `t.jsonl:2: priority: must be a number, got "high"`},
		{"strict negative", `,"strict_priority":-1`, 0, 0, [3]int{}, "t.jsonl:2: strict_priority: must be an integer in [0, 4294967295], got -1"},
		{"class number", `,"policy_class":3`, 0, 0, [3]int{}, "t.jsonl:2: policy_class: must be a string, got 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			line := `{"timestamp":1,"input_length":4,"output_length":1,"hash_ids":[2]` + tc.field + "}\n"
			w, err := ReadMooncake("t.jsonl", []byte(ok+line), 4)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tr := w.Sessions[1].Turns[0]
			if tr.Priority != tc.priority || tr.StrictPriority != tc.strict {
				t.Errorf("priority %d strict %d, want %d %d", tr.Priority, tr.StrictPriority, tc.priority, tc.strict)
			}
			if got := [3]int{w.Priorities, w.Stricts, w.Classes}; got != tc.counts {
				t.Errorf("counts %v, want %v", got, tc.counts)
			}
		})
	}
}
