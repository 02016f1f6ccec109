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
// simulator and writes docs/validation.md's text (stdout, or -o FILE).
func runValidate(args []string, stdout io.Writer) error {
	fset := flag.NewFlagSet("validate", flag.ContinueOnError)
	fset.SetOutput(io.Discard)
	out := fset.String("o", "", "write the report to `FILE` (default stdout)")
	if err := fset.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stdout, "usage: dynosim validate [-o docs/validation.md]")
			return err
		}
		return usageError{fmt.Errorf("validate: %v", err)}
	}
	if fset.NArg() > 0 {
		return usageError{fmt.Errorf("validate: unexpected argument %q", fset.Arg(0))}
	}
	f, err := validation.Generate()
	if err != nil {
		return internalError{err} // the embedded data is ours: a failure is a bug
	}
	if *out == "" {
		_, err = io.WriteString(stdout, f.Doc)
		return err
	}
	return os.WriteFile(*out, []byte(f.Doc), 0o644)
}
