package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/timing"
)

func TestRunConvertProfile(t *testing.T) {
	out := filepath.Join(t.TempDir(), "perf_data.npz")
	// Flags after the folder, as in `dynosim convert-profile DIR -o FILE`.
	if err := runConvertProfile([]string{"../../timing/testdata/profiler", "-o", out}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	p, err := timing.LoadProfile(data, out)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.PrefillT) != timing.DefaultProfileResolution {
		t.Errorf("grid has %d points", len(p.PrefillT))
	}
	// Flags before the folder, other resolution.
	if err := runConvertProfile([]string{"--resolution", "7", "-o", out, "../../timing/testdata/profiler_json"}); err != nil {
		t.Fatal(err)
	}
	data, _ = os.ReadFile(out)
	if p, err = timing.LoadProfile(data, out); err != nil || len(p.Context) != 7 {
		t.Fatalf("resolution 7: %v", err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "usage: dynosim convert-profile"},
		{[]string{"a", "b"}, "usage: dynosim convert-profile"},
		{[]string{"--bogus", "x"}, "flag provided but not defined"},
		{[]string{"no/such/dir"}, "no/such/dir: not a directory"},
		{[]string{"../../timing/testdata", "-o", out}, "not a profiler results folder"},
		{[]string{"../../timing/testdata/profiler", "--resolution", "1"}, "--resolution: must be in [2, 10000]"},
	} {
		if err := runConvertProfile(c.args); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err %v, want %q", c.args, err, c.want)
		}
	}
}
