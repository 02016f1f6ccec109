package dynosim_test

import (
	"bufio"
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/dynosim/dynosim-web/"

// floors orders the top-level folders: a package may import its own floor
// and the floors below it, never one above. Leaves (detmath, idmap, the KV
// pools, timing) know nothing of the simulator; the core knows nothing of
// its front ends (CLI, live server, WASM, Worker, page). docs/architecture.md
// draws the same picture.
var floors = map[string]int{
	"internal": 0, "kv": 0, "timing": 0,
	"core":   1,
	"public": 2, "cmd": 2, "wasm": 2, "ui": 2,
}

func floorOf(t *testing.T, pkg string) int {
	top, _, _ := strings.Cut(strings.TrimPrefix(pkg, module), "/")
	f, ok := floors[top]
	if !ok {
		t.Fatalf("package %s sits in top-level folder %q, which has no floor in layout_test.go", pkg, top)
	}
	return f
}

// TestImportsRunDownward fails on any import (test imports included) from a
// lower floor to a higher one, so the folders keep showing the floors.
func TestImportsRunDownward(t *testing.T) {
	if testing.Short() {
		t.Skip("go list needs the go command; not under -short (wasm)")
	}
	out, err := exec.Command("go", "list", "-f",
		`{{.ImportPath}} {{join .Imports " "}} {{join .TestImports " "}} {{join .XTestImports " "}}`,
		"./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	checked := 0
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || fields[0] == strings.TrimSuffix(module, "/") {
			continue
		}
		from := floorOf(t, fields[0])
		for _, imp := range fields[1:] {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			checked++
			if to := floorOf(t, imp); to > from {
				t.Errorf("%s (floor %d) imports %s (floor %d): imports must run downward",
					strings.TrimPrefix(fields[0], module), from, strings.TrimPrefix(imp, module), to)
			}
		}
	}
	if checked == 0 {
		t.Fatal("go list reported no in-module imports: the check checked nothing")
	}
}
