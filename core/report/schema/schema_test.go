package schema

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestStandardLibraryOnly keeps the package importable from every floor:
// it imports nothing but the standard library.
func TestStandardLibraryOnly(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		ast, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range ast.Imports {
			if p := strings.Trim(imp.Path.Value, `"`); strings.Contains(strings.Split(p, "/")[0], ".") {
				t.Errorf("%s imports %s: the schema must import only the standard library", f, p)
			}
		}
	}
}

// TestKeysAreUnique: a key named twice would make two names for one value.
func TestKeysAreUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range append(SummaryKeys(), Sections...) {
		if seen[k] && k != SectionSummary {
			t.Errorf("key %q is named twice", k)
		}
		seen[k] = true
	}
	for _, k := range WallClockKeys {
		if !IsWallClock(k) {
			t.Errorf("IsWallClock(%q) is false", k)
		}
	}
}
