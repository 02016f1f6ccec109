package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/dynosim/dynosim-web/cmd/dynosim/validation"
)

// runValidate replays the public serving measurements through the
// simulator and writes docs/validation.md's text, or with --format json
// the per-source error figures (stdout, or -o FILE).
// generate is validation.Generate. The validation package's own tests
// replay every source and check the JSON against docs/validation.md
// (TestValidationDoc, ~140 CPU-s); this package's tests check only the
// command's plumbing, so they swap in a stub instead of paying that twice.
var generate = validation.Generate

func runValidate(args []string, stdout io.Writer) error {
	fset := flag.NewFlagSet("validate", flag.ContinueOnError)
	fset.SetOutput(io.Discard)
	out := fset.String("o", "", "write the report to `FILE` (default stdout)")
	fmtFlag := fset.String("format", "text", "`text` (docs/validation.md) or json (per-source figures)")
	kern := fset.String("kernels", "default", "price every timing.type: default replay with the `default` timing (docs/validation.md: the kernel tables where measured, the curves elsewhere), curves or aic (the tables only)")
	if err := fset.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stdout, "usage: dynosim validate [--format text|json] [--kernels default|curves|aic] [-o FILE]")
			return err
		}
		return usageError{fmt.Errorf("validate: %v", err)}
	}
	if fset.NArg() > 0 {
		return usageError{fmt.Errorf("validate: unexpected argument %q", fset.Arg(0))}
	}
	if *fmtFlag != "text" && *fmtFlag != "json" {
		return usageError{fmt.Errorf("validate: --format: want text or json, got %q", *fmtFlag)}
	}
	if err := validation.SetKernels(*kern); err != nil {
		return usageError{fmt.Errorf("validate: --kernels: %v", err)}
	}
	f, err := generate()
	if err != nil {
		return internalError{err} // the embedded data is ours: a failure is a bug
	}
	text := []byte(f.Doc)
	if *fmtFlag == "json" {
		text = f.JSON
	}
	if *out == "" {
		_, err = stdout.Write(text)
		return err
	}
	return os.WriteFile(*out, text, 0o644)
}
