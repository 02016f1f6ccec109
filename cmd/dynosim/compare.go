package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/dynosim/dynosim-web/core/measured"
)

const compareUsage = "usage: dynosim compare [-format table|json] REAL [REAL2] PREDICTION.json\n" +
	"  REAL: an AIPerf profile_export_aiperf.json and/or profile_export.jsonl, an AIPerf artifact directory, or a vllm bench serve --save-result JSON"

// runCompare implements `dynosim compare REAL [REAL2] PREDICTION.json`:
// the measured run's summary beside the prediction's, with the relative
// error of each metric both have. Flags may come anywhere.
func runCompare(args []string, stdout io.Writer) error {
	fset := flag.NewFlagSet("compare", flag.ContinueOnError)
	fset.SetOutput(io.Discard)
	format := fset.String("format", "table", "output `format`: table or json")
	pos, err := parseInterspersed(fset, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stdout, compareUsage)
			return err
		}
		return usageError{fmt.Errorf("compare: %v", err)}
	}
	if len(pos) < 2 || len(pos) > 3 {
		return usageError{fmt.Errorf("compare: want REAL [REAL2] PREDICTION.json, got %d arguments\n%s", len(pos), compareUsage)}
	}
	if *format != "table" && *format != "json" {
		return usageError{fmt.Errorf("compare: -format: must be table or json, got %q", *format)}
	}
	run, err := readMeasured(pos[:len(pos)-1])
	if err != nil {
		return err
	}
	pred, err := readFile(pos[len(pos)-1])
	if err != nil {
		return err
	}
	rows, err := measured.Compare(run, pred)
	if err != nil {
		return fmt.Errorf("%s: %w", pos[len(pos)-1], err)
	}
	if *format == "json" {
		type row struct {
			Key       string  `json:"key"`
			Measured  float64 `json:"measured"`
			Predicted float64 `json:"predicted"`
			Error     float64 `json:"error"` // predicted / measured − 1
		}
		out := make([]row, len(rows))
		for i, r := range rows {
			out[i] = row(r)
		}
		js, err := json.MarshalIndent(out, "", "  ")
		if err != nil {
			return internalError{err} // Compare's rows are finite
		}
		_, err = stdout.Write(append(js, '\n'))
		return err
	}
	measured.FormatTable(stdout, rows)
	return nil
}

// parseInterspersed parses flags that may come before, between or after
// the positional arguments, and returns the positional ones.
func parseInterspersed(fset *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fset.Parse(args); err != nil {
			return nil, err
		}
		args = fset.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// AIPerf's artifact file names (aiperf/common/config/config_defaults.py).
var aiperfArtifacts = []string{"profile_export_aiperf.json", "profile_export.jsonl"}

// readMeasured reads a measured run from files and AIPerf artifact
// directories.
func readMeasured(paths []string) (*measured.Run, error) {
	var files []measured.File
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, errors.Unwrap(err))
		}
		if !st.IsDir() {
			data, err := readFile(p)
			if err != nil {
				return nil, err
			}
			files = append(files, measured.File{Name: p, Data: data})
			continue
		}
		n := len(files)
		for _, name := range aiperfArtifacts {
			f := filepath.Join(p, name)
			if _, err := os.Stat(f); err != nil {
				continue
			}
			data, err := readFile(f)
			if err != nil {
				return nil, err
			}
			files = append(files, measured.File{Name: f, Data: data})
		}
		if len(files) == n {
			return nil, fmt.Errorf("%s: no %s or %s in this directory (an AIPerf artifact directory has them)", p, aiperfArtifacts[0], aiperfArtifacts[1])
		}
	}
	return measured.Parse(files...)
}
