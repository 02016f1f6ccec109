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
