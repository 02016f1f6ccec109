package main

import "testing"

// Issue 32 item 9: a service run's share link is this page with
// ?run=<id> (service= and embed= kept, the config fragment dropped).
func TestItem9RunPageLink(t *testing.T) {
	id := "0123456789abcdef0123456789abcdef"
	for _, tc := range []struct{ href, id, want string }{
		{"http://127.0.0.1:8080/", id, "http://127.0.0.1:8080/?run=" + id},
		{"https://sim.example.org/?service=https%3A%2F%2Fw.example&embed=1#config=eDog", id,
			"https://sim.example.org/?embed=1&run=" + id + "&service=https%3A%2F%2Fw.example"},
		{"https://sim.example.org/?run=ffffffffffffffffffffffffffffffff", id, "https://sim.example.org/?run=" + id},
		{"https://u:p@sim.example.org/", id, "https://sim.example.org/?run=" + id},
		{"http://127.0.0.1:8080/", "../x", ""},
		{"http://127.0.0.1:8080/", "0123456789ABCDEF0123456789ABCDEF", ""},
		{"file:///tmp/index.html", id, ""},
	} {
		if got := runPageLink(tc.href, tc.id); got != tc.want {
			t.Errorf("runPageLink(%q, %q) = %q, want %q", tc.href, tc.id, got, tc.want)
		}
	}
	for search, want := range map[string]string{"?run=" + id: id, "?embed=1&run=x": "x", "": "", "?%zz": ""} {
		if got := runQuery(search); got != want {
			t.Errorf("runQuery(%q) = %q, want %q", search, got, want)
		}
	}
	for _, tc := range []struct{ cfg, trace, want string }{
		{"team.yaml", "conv.jsonl", "Run " + id + " on w.example: team.yaml (in the editor) on conv.jsonl."},
		{"", "", "Run " + id + " on w.example (the service kept no config for it)."},
	} {
		if got := sharedNote(id, "https://w.example", tc.cfg, tc.trace); got != tc.want {
			t.Errorf("sharedNote = %q, want %q", got, tc.want)
		}
	}
}
