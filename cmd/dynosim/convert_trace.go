package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/dynosim/dynosim-web/core/measured"
)

const convertTraceUsage = "usage: dynosim convert-trace [-o OUT.jsonl] REAL...\n" +
	"  REAL: an AIPerf profile_export.jsonl (with or without its profile_export_aiperf.json), an AIPerf artifact directory, or a vllm bench serve --save-result JSON (a summary-only one gives requests of its mean lengths)"

// runConvertTrace implements `dynosim convert-trace [-o OUT] REAL...`: the
// measured run's requests as a Mooncake JSONL trace (measured.Run.Trace)
// for `dynosim predict --trace`, to OUT or stdout, streamed and bounded
// like a trace read (workload.MaxTraceBytes).
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
	if *out == "" || *out == "-" {
		// The trace streams out row by row (measured.Run.WriteTrace
		// checks its size first): it is never held whole.
		bw := bufio.NewWriterSize(stdout, 1<<16)
		if _, err := run.WriteTrace(bw); err != nil {
			return err
		}
		if note := run.TraceNote(); note != "" {
			fmt.Fprintf(stderr, "dynosim: note: %s\n", note)
		}
		return bw.Flush()
	}
	n, err := writeTraceFile(*out, run)
	if err != nil {
		return err
	}
	if note := run.TraceNote(); note != "" {
		fmt.Fprintf(stderr, "dynosim: note: %s\n", note)
	}
	fmt.Fprintf(stderr, "dynosim: wrote %s: %d requests (replay with: dynosim predict --trace %s)\n", *out, n, *out)
	return nil
}

// writeTraceFile streams run's trace into a temporary file beside path
// and renames it to path once whole, so a refused or failed conversion
// leaves no partial trace (nor replaces an older one); it returns the
// number of requests written.
func writeTraceFile(path string, run *measured.Run) (int, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return 0, fmt.Errorf("-o %s: %w", path, err)
	}
	defer os.Remove(f.Name()) // after a successful rename it is gone already
	bw := bufio.NewWriterSize(f, 1<<16)
	n, err := run.WriteTrace(bw)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		if _, ok := err.(*os.PathError); ok {
			return 0, fmt.Errorf("-o %s: %w", path, err)
		}
		return 0, err
	}
	return n, nil
}
