package workload

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzScanRow: whatever the fast scanner accepts, encoding/json accepts and
// reads the same way; the same holds for the hash-id arrays.
func FuzzScanRow(f *testing.F) {
	for _, s := range []string{
		`{"timestamp": 0, "input_length": 6758, "output_length": 500, "hash_ids": [0, 1, 2, 3]}`,
		`{"session_id":"a","delay":25,"input_length":8,"output_length":1,"hash_ids":[1,2]}`,
		`{"Timestamp":1,"hash_ids":[]}`,
		`{"timestamp":1e3,"x":{"y":1},"hash_ids":[1]}`,
		`{"hash_ids":[1,"2",-0.5e+7],"hash_ids":null,"session_id":true}`,
		` { } `, `{"a\u0062":1}`, `{"timestamp":01}`, `[1]`, `{"hash_ids":[1,]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var fast row
		if scanRow(b, &fast) {
			var slow row
			if err := json.Unmarshal(b, &slow); err != nil {
				t.Fatalf("fast path accepted what encoding/json rejects (%v): %q", err, b)
			}
			for _, f := range rowFields {
				a, c := *f.get(&fast), *f.get(&slow)
				if !bytes.Equal(a, c) {
					t.Fatalf("%s: fast %q, encoding/json %q in %q", f.key, a, c, b)
				}
			}
		}
		if nums, ok := scanNumbers(b, nil); ok {
			var slow []json.Number
			if err := json.Unmarshal(b, &slow); err != nil {
				t.Fatalf("numbers: fast accepted what encoding/json rejects (%v): %q", err, b)
			}
			if len(nums) != len(slow) {
				t.Fatalf("numbers: %v vs %v", nums, slow)
			}
			for i := range nums {
				if string(nums[i]) != string(slow[i]) {
					t.Fatalf("numbers: %v vs %v", nums, slow)
				}
			}
		}
	})
}

func TestParseUint(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint64
		ok   bool
	}{{"0", 0, true}, {"18446744073709551615", 1<<64 - 1, true}, {"18446744073709551616", 0, false},
		{"", 0, false}, {"1.5", 0, false}, {"-1", 0, false}, {"1e3", 0, false}, {"007", 7, true}} {
		if v, ok := parseUint([]byte(tc.in)); v != tc.want || ok != tc.ok {
			t.Errorf("parseUint(%q) = %d, %v", tc.in, v, ok)
		}
	}
}
