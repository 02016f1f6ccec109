package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

const convertTraceUsage = "usage: dynosim convert-trace [-o OUT.jsonl] REAL...\n" +
	"  REAL: an AIPerf profile_export.jsonl (with or without its profile_export_aiperf.json), an AIPerf artifact directory, or a vllm bench serve --save-result JSON (a summary-only one gives requests of its mean lengths)"

// runConvertTrace implements `dynosim convert-trace [-o OUT] REAL...`: the
// measured run's requests as a Mooncake JSONL trace (measured.Run.Trace)
// for `dynosim predict --trace`, to OUT or stdout.
func runConvertTrace(args []string, stdout, stderr io.Writer) error {
	fset := flag.NewFlagSet("convert-trace", flag.ContinueOnError)
	fset.SetOutput(io.Discard)
	out := fset.String("o", "", "write the trace to `FILE` (default stdout)")
	fset.StringVar(out, "output", "", "same as -o")
	pos, err := parseInterspersed(fset, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stdout, convertTraceUsage)
			return err
		}
		return usageError{fmt.Errorf("convert-trace: %v", err)}
	}
	if len(pos) == 0 || len(pos) > 2 {
		return usageError{fmt.Errorf("convert-trace: want one measured run (1 or 2 files, or a directory), got %d arguments\n%s", len(pos), convertTraceUsage)}
	}
	run, err := readMeasured(pos)
	if err != nil {
		return err
	}
	trace, err := run.Trace()
	if err != nil {
		return err
	}
	if note := run.TraceNote(); note != "" {
		fmt.Fprintf(stderr, "dynosim: note: %s\n", note)
	}
	if *out == "" || *out == "-" {
		_, err = stdout.Write(trace)
		return err
	}
	if err := os.WriteFile(*out, trace, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "dynosim: wrote %s: %d requests (replay with: dynosim predict --trace %s)\n", *out, bytes.Count(trace, []byte("\n")), *out)
	return nil
}
