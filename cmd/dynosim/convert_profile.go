package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/dynosim/dynosim-web/timing"
)

// runConvertProfile implements `dynosim convert-profile DIR [-o FILE]
// [--resolution N]`: it converts a profiler results folder (mocker.md §6.3)
// to a mocker-format perf_data.npz. Flags may come before or after DIR.
// Output defaults to DIR/perf_data.npz; "-o -" writes to stdout.
func runConvertProfile(args []string) error {
	fset := flag.NewFlagSet("convert-profile", flag.ContinueOnError)
	fset.SetOutput(io.Discard)
	out := fset.String("o", "", "output .npz `FILE` (default DIR/perf_data.npz; - for stdout)")
	fset.StringVar(out, "output", "", "same as -o")
	res := fset.Int("resolution", timing.DefaultProfileResolution, "grid points per axis")
	usage := errors.New("usage: dynosim convert-profile DIR [-o perf_data.npz] [--resolution N]")

	var pos []string
	for len(args) > 0 {
		if err := fset.Parse(args); err != nil {
			return fmt.Errorf("convert-profile: %v; %v", err, usage)
		}
		args = fset.Args()
		if len(args) > 0 {
			pos = append(pos, args[0])
			args = args[1:]
		}
	}
	if len(pos) != 1 {
		return usage
	}
	if *res < 2 || *res > 10000 {
		return fmt.Errorf("convert-profile: --resolution: must be in [2, 10000], got %d", *res)
	}
	dir := filepath.ToSlash(filepath.Clean(pos[0]))
	if st, err := os.Stat(pos[0]); err != nil || !st.IsDir() {
		return fmt.Errorf("%s: not a directory", pos[0])
	}
	readFile := func(name string) ([]byte, error) { return os.ReadFile(filepath.FromSlash(name)) }
	p, fit, err := timing.ConvertProfile(readFile, dir, *res)
	if err != nil {
		return err
	}
	data, err := timing.WriteNPZ(p.Arrays())
	if err != nil {
		return err
	}
	dst := *out
	if dst == "" {
		dst = filepath.Join(pos[0], "perf_data.npz")
	}
	if dst == "-" {
		_, err = os.Stdout.Write(data)
		return err
	}
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		return err
	}
	var note []string
	if fit.RequestCoefClamped {
		note = append(note, "negative per-request decode coefficient clamped to 0")
	}
	fmt.Fprintf(os.Stderr, "dynosim: wrote %s: prefill %.4g + %.4g·tokens ms; decode %.4g + %.4g·requests + %.4g·kv_tokens ms%s\n",
		dst, 1000*fit.PrefillA, 1000*fit.PrefillB, 1000*fit.DecodeA, 1000*fit.DecodeB, 1000*fit.DecodeC,
		strings.Join(append([]string{""}, note...), "; "))
	return nil
}
