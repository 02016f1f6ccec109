package main

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

func TestItem32_8RequestScanner(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		bad        bool
	}{
		{name: "record", line: `{"uuid":7,"arrival_time_ms":0,"ttft_ms":184.337846,"itl_ms":8.561023174348698,"worker":0,"terminal_status":"completed","rejection_reason":null,"router_overlap_tokens":null,"ttft_breakdown_ms":{"frontend":7.5,"prefill":0,"first_token_pass":176.837846}}`},
		{name: "spaces and escapes", line: ` { "uuid" : 8 , "terminal_status" : "a \"q\" \u00e9\n", "x" : true, "y": false, "z": -1.5e-3, "arr": [1, {"a": "]"}] } `},
		{name: "empty object", line: `{}`},
		{name: "null breakdown", line: `{"uuid":9,"ttft_ms":null,"ttft_breakdown_ms":null}`},
		{name: "not an object", line: `[1]`, bad: true},
		{name: "truncated", line: `{"uuid":1`, bad: true},
		{name: "bad value", line: `{"uuid":nope}`, bad: true},
		{name: "bad number", line: `{"uuid":1.2.3}`, bad: true},
		{name: "unterminated string", line: `{"s":"abc}`, bad: true},
		{name: "trailing text", line: `{"a":1} x`, bad: true},
		{name: "bad nested", line: `{"a":{"b":}}`, bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fields, err := scanObject(tc.line, nil)
			var ref map[string]json.RawMessage
			refErr := json.NewDecoder(bytes.NewReader([]byte(tc.line))).Decode(&ref)
			if tc.bad {
				if err == nil {
					t.Fatalf("accepted %q", tc.line)
				}
				return
			}
			if err != nil || refErr != nil {
				t.Fatalf("scan: %v, encoding/json: %v", err, refErr)
			}
			if len(fields) != len(ref) {
				t.Fatalf("%d fields, want %d", len(fields), len(ref))
			}
			for _, f := range fields {
				if got, want := scanCell(f.raw), parseCell(ref[f.key]); got != want {
					t.Errorf("%s: cell %+v, want %+v", f.key, got, want)
				}
			}
		})
	}
	tab, err := parseRequests([]byte("{\"uuid\":1,\"ttft_breakdown_ms\":{\"prefill\":2}}\n{\"uuid\":2,\"ttft_breakdown_ms\":null}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]map[string]float64{"1": {"prefill": 2}, "2": nil}; !reflect.DeepEqual(tab.Breakdown, want) {
		t.Errorf("breakdown = %v, want %v", tab.Breakdown, want)
	}
}
