package workload

import "testing"

// TestItem34_2RunLen: Prompt's tokens are equal within every aligned run
// of RunLen tokens (what the KV router's hashing relies on: router.Request
// RunLen), for trace turns with the last block cut short, past the ids
// (L4) and with one id twice in a row, and RunLen is 0 for synthetic
// prompts.
func TestItem34_2RunLen(t *testing.T) {
	for _, tc := range []struct {
		name  string
		trace string
		block int
	}{
		{"whole blocks", `{"timestamp":0,"input_length":12,"output_length":1,"hash_ids":[1,2,3]}`, 4},
		{"last block short", `{"timestamp":0,"input_length":10,"output_length":1,"hash_ids":[1,2,3]}`, 4},
		{"an id twice in a row", `{"timestamp":0,"input_length":15,"output_length":1,"hash_ids":[5,5,6]}`, 5},
		{"one-token blocks", `{"timestamp":0,"input_length":3,"output_length":1,"hash_ids":[7,8,9]}`, 1},
		{"no input length", `{"timestamp":0,"output_length":1,"hash_ids":[1,2]}`, 512},
	} {
		w := read(t, tc.trace, tc.block)
		tr := &w.Sessions[0].Turns[0]
		n := w.RunLen(tr)
		if n != tc.block {
			t.Fatalf("%s: run length %d, want %d", tc.name, n, tc.block)
		}
		p := w.Prompt(nil, tr)
		for i := range p {
			if p[i] != p[i/n*n] {
				t.Fatalf("%s: token %d is %d, its run's first %d", tc.name, i, p[i], p[i/n*n])
			}
		}
	}
	s, err := Synthetic(2, 8, 1)
	if err != nil {
		t.Fatal(err)
	}
	if n := s.RunLen(&s.Sessions[0].Turns[0]); n != 0 {
		t.Fatalf("synthetic run length %d", n)
	}
	// A turn without ids in a workload of trace blocks: its tokens differ
	// within a trace block, so no run length.
	mixed := &Workload{TraceBlock: 4, Sessions: []Session{{Turns: []Turn{{Input: 8, ord: 3}}}}}
	tr := &mixed.Sessions[0].Turns[0]
	if p := mixed.Prompt(nil, tr); p[0] == p[1] {
		t.Fatalf("synthetic tokens %v", p)
	}
	if n := mixed.RunLen(tr); n != 0 {
		t.Fatalf("run length %d of a turn without ids", n)
	}
}
