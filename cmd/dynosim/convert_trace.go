package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/dynosim/dynosim-web/core/measured"
)

const convertTraceUsage = "usage: dynosim convert-trace [-o OUT.jsonl] REAL...\n" +
	"  REAL: an AIPerf profile_export.jsonl (with or without its profile_export_aiperf.json), an AIPerf artifact directory, or a vllm bench serve --save-result --save-detailed JSON"

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
	if note := arrivalNote(run); note != "" {
		fmt.Fprintf(stderr, "dynosim: note: %s\n", note)
	}
	if *out == "" || *out == "-" {
		_, err = stdout.Write(trace)
		return err
	}
	if err := os.WriteFile(*out, trace, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "dynosim: wrote %s: %d requests over %.3f s (replay with: dynosim predict --trace %s)\n",
		*out, len(run.Requests), run.Requests[len(run.Requests)-1].StartMs/1000, *out)
	return nil
}

// arrivalNote says how the trace placed arrivals when the run did not
// record start times (vLLM results before start_times; see
// core/measured/vllm.go), "" when they are measured.
func arrivalNote(run *measured.Run) string {
	if run.Tool != measured.ToolVLLM || len(run.Files) != 1 {
		return ""
	}
	data, err := os.ReadFile(run.Files[0])
	if err != nil {
		return ""
	}
	var v struct {
		StartTimes     json.RawMessage `json:"start_times"`
		RequestRate    json.RawMessage `json:"request_rate"`
		MaxConcurrency *int            `json:"max_concurrency"`
	}
	if json.Unmarshal(data, &v) != nil || v.StartTimes != nil {
		return ""
	}
	var rate float64
	if json.Unmarshal(v.RequestRate, &rate) == nil && rate > 0 {
		return fmt.Sprintf("the result has no start_times (vLLM before 2026-01): arrivals are evenly spaced at its request rate, %g/s (vLLM drew random gaps with that mean)", rate)
	}
	note := "the result has no start_times (vLLM before 2026-01) and its request rate is inf: every request arrives at 0 ms"
	if v.MaxConcurrency != nil {
		note += fmt.Sprintf("; the run was closed-loop with --max-concurrency %d: replay with --set traffic.load.type=concurrency --set traffic.load.concurrency=%d", *v.MaxConcurrency, *v.MaxConcurrency)
	}
	return note
}
