package main

import (
	"go/parser"
	"go/token"
	"testing"
)

func TestHelperScript(t *testing.T) {
	src := "package domrender\n\nconst other = \"x\"\n\nconst jsHelperScript = \"(function(){if(window.vuguRender)return;\\\"a\\\"})()\"\n"
	f, err := parser.ParseFile(token.NewFileSet(), "renderer-js-script.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	got, err := helperScript(f)
	if want := `(function(){if(window.vuguRender)return;"a"})()`; err != nil || got != want {
		t.Errorf("helperScript = %q, %v; want %q", got, err, want)
	}
	f, _ = parser.ParseFile(token.NewFileSet(), "x.go", "package x\n", 0)
	if _, err := helperScript(f); err == nil {
		t.Error("no constant: want an error")
	}
}
