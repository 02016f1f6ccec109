package main

import "testing"

func TestOneLine(t *testing.T) {
	for in, want := range map[string]string{
		"a":                   "a",
		"  a b \n c\n":        "a b c",
		"x.yaml:3: bad\n\tok": "x.yaml:3: bad ok",
	} {
		if got := oneLine(in); got != want {
			t.Errorf("oneLine(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCheckSize(t *testing.T) {
	for _, tc := range []struct {
		size, limit int
		want        string
	}{
		{0, maxTrace, ""},
		{maxTrace, maxTrace, ""},
		{maxTrace + 1, maxTrace, "big.jsonl: 512.0 MiB is more than the page takes (512 MiB); replay it with the CLI (dynosim predict)"},
		{600 << 20, maxTrace, "big.jsonl: 600.0 MiB is more than the page takes (512 MiB); replay it with the CLI (dynosim predict)"},
	} {
		err := checkSize("big.jsonl", tc.size, tc.limit)
		if got := ""; err != nil {
			got = err.Error()
			if got != tc.want {
				t.Errorf("checkSize(%d, %d) = %q, want %q", tc.size, tc.limit, got, tc.want)
			}
		} else if tc.want != "" {
			t.Errorf("checkSize(%d, %d) = nil, want %q", tc.size, tc.limit, tc.want)
		}
	}
}
