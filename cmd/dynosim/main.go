// Command dynosim is the DynoSim Web CLI: predict runs one simulated
// serving configuration over a workload and reports TTFT, ITL, throughput,
// cache reuse and preemptions; serve serves the web page; convert-profile
// turns profiler results into a timing profile.
package main

import (
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/dynosim/dynosim-web/core/report"
	"github.com/dynosim/dynosim-web/core/report/schema"
	"github.com/dynosim/dynosim-web/core/sim"
	"github.com/dynosim/dynosim-web/core/workload"
	"github.com/dynosim/dynosim-web/internal/defaultconfig"
	"github.com/dynosim/dynosim-web/timing/kernels/kerneldata"
)

//go:embed sample.jsonl
var sampleTrace []byte

const usage = `usage: dynosim <command> [flags]

commands:
  predict          run one prediction (no -c: embedded default config and sample trace)
  recommend        search configurations under an SLA and a GPU budget (-c rec.yaml)
  serve            serve the web page (--addr 127.0.0.1:8080, --service-url URL)
  live             serve one simulated deployment on the wall clock: OpenAI API, /metrics, KV events (docs/live.md)
  convert-profile  convert a profiler results folder to a timing profile (.npz)
  validate         replay public serving measurements and report the timing model's error (docs/validation.md; --format json: per source)
  compare          hold a real benchmark run (AIPerf, vllm bench serve) against a prediction.json
  convert-trace    turn a real benchmark run's requests into a Mooncake trace (-o trace.jsonl)

run 'dynosim <command> -h' for the flags of a command.
`

// usageError marks errors that should print usage.
type usageError struct{ error }

// internalError is a bug, not bad input: it exits 1, never 2, so a crash
// can never pass for a clean rejection.
type internalError struct{ error }

func main() {
	err := run(os.Args[1:], os.Stdout, os.Stderr)
	if err == nil {
		return
	}
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	fmt.Fprintf(os.Stderr, "dynosim: %s\n", oneLine(err.Error()))
	var ue usageError
	if errors.As(err, &ue) {
		fmt.Fprint(os.Stderr, usage)
	}
	os.Exit(exitCode(err))
}

// exitCode is 1 for an internal error (or a search with nothing
// feasible), 2 for bad usage or input.
func exitCode(err error) int {
	var ie internalError
	var nf noFeasible
	if errors.As(err, &ie) || errors.As(err, &nf) {
		return 1
	}
	return 2
}

// run runs one command. A panic below it is reported as an internal error.
func run(args []string, stdout, stderr io.Writer) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = internalError{fmt.Errorf("internal error: %v (please report it with the command and its inputs)", p)}
		}
	}()
	return dispatch(args, stdout, stderr)
}

// testCommand, when set, is one more command (tests only: a way to panic).
var testCommand func() error

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func dispatch(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageError{errors.New("missing command")}
	}
	switch args[0] {
	case "predict":
		return runPredict(args[1:], stdout, stderr)
	case "recommend":
		return runRecommend(args[1:], stdout, stderr)
	case "serve":
		return runServe(args[1:])
	case "live":
		return runLive(args[1:], stderr)
	case "convert-profile":
		return runConvertProfile(args[1:])
	case "validate":
		return runValidate(args[1:], stdout)
	case "compare":
		return runCompare(args[1:], stdout)
	case "convert-trace":
		return runConvertTrace(args[1:], stdout, stderr)
	case "test-panic":
		if testCommand != nil {
			return testCommand()
		}
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	return usageError{fmt.Errorf("unknown command %q", args[0])}
}

// loadConfig reads the config at path into in (empty: the embedded
// default, whose sample trace is embedded too); files it names are read
// relative to it.
func loadConfig(in *sim.Inputs, path string) error {
	in.KernelTable = kerneldata.Load // timing.kernels: aic (embedded tables)
	if path == "" {
		in.Config, in.ConfigName = []byte(defaultconfig.YAML), "default.yaml"
		in.ReadFile = func(p string) ([]byte, error) {
			if p == "sample.jsonl" {
				return sampleTrace, nil
			}
			return readFile(p)
		}
		return nil
	}
	data, err := readFile(path)
	if err != nil {
		return err
	}
	in.Config, in.ConfigName = data, filepath.Base(path)
	dir := filepath.Dir(path)
	in.ReadFile = func(p string) ([]byte, error) {
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		return readFile(p)
	}
	return nil
}

// parseConfigFlags adds -c's alias --config and --set to fs, parses args
// and refuses arguments left over: the flags of every command that takes
// a config.
func parseConfigFlags(fs *flag.FlagSet, args []string, cfgPath *string, sets *multiFlag) error {
	fs.Var(sets, "set", "override `PATH=VALUE` (repeatable, left to right)")
	fs.StringVar(cfgPath, "config", "", "same as -c")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("%s: unexpected argument %q", fs.Name(), fs.Arg(0))}
	}
	return nil
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func runPredict(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("predict", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		cfgPath   = fs.String("c", "", "config `FILE` (YAML); default: the embedded default")
		tracePath = fs.String("trace", "", "trace `FILE` (.jsonl Mooncake, .csv Azure); overrides traffic.source.paths")
		profile   = fs.String("profile", "", "timing profile `FILE.npz`; selects profile timing")
		format    = fs.String("format", "table", "output `format`: table or json")
		outDir    = fs.String("output-dir", "", "write prediction.json (and requests.jsonl) to `DIR`")
		capture   = fs.Bool("capture-per-request", false, "also write requests.jsonl (with --output-dir)")
		stats     = fs.Bool("stats", false, "print wall time, peak memory and simulation speed to stderr")
		timeline  = fs.Uint64("timeline", 0, "record request `UUID`'s life, pass by pass, in the report (request_timeline)")
		sets      multiFlag
	)
	if err := parseConfigFlags(fs, args, cfgPath, &sets); err != nil {
		return err
	}
	if *format != "table" && *format != "json" {
		return usageError{fmt.Errorf("--format: must be table or json, got %q", *format)}
	}
	if *capture && *outDir == "" {
		return usageError{errors.New("--capture-per-request writes requests.jsonl into --output-dir DIR; give --output-dir")}
	}

	in := sim.Inputs{Sets: sets, CapturePerRequest: *capture, Watch: *timeline}
	if err := loadConfig(&in, *cfgPath); err != nil {
		return err
	}
	if *tracePath != "" {
		data, err := readFile(*tracePath)
		if err != nil {
			return err
		}
		in.Trace, in.TraceName = data, filepath.Base(*tracePath)
	}
	if *profile != "" {
		data, err := readFile(*profile)
		if err != nil {
			return err
		}
		in.Profile, in.ProfileName = data, filepath.Base(*profile)
	}

	start := time.Now()
	rep, err := sim.Predict(in, nil)
	if err != nil {
		return err
	}
	wall := time.Since(start)
	rep.SetWallTime(float64(wall.Microseconds()) / 1000)
	if *stats {
		fmt.Fprintf(stderr, "dynosim: %d requests, %.0f output tokens simulated in %.3f s wall (peak RSS %.0f MB): %.2f M simulated output tokens/s\n",
			int(rep.Summary[schema.NumRequests]), rep.Summary[schema.TotalOutputTokens], wall.Seconds(),
			float64(peakRSSBytes())/1e6, rep.Summary[schema.TotalOutputTokens]/wall.Seconds()/1e6)
	}
	js, err := rep.JSON()
	if err != nil {
		return err
	}
	if *outDir != "" {
		if err := writeOutputs(*outDir, js, rep, *capture); err != nil {
			return err
		}
	}
	if *format == "json" {
		_, err = stdout.Write(js)
		return err
	}
	_, err = io.WriteString(stdout, rep.Table())
	return err
}

func writeOutputs(dir string, js []byte, rep *report.Report, capture bool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "prediction.json"), js, 0o644); err != nil {
		return err
	}
	if capture {
		return os.WriteFile(filepath.Join(dir, "requests.jsonl"), rep.RequestsJSONL(), 0o644)
	}
	return nil
}

// maxInput bounds any file the CLI reads: the trace limit
// (workload.MaxTraceBytes, 1 GiB), which convert-trace also writes to.
const maxInput = workload.MaxTraceBytes

func readFile(p string) ([]byte, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, errors.Unwrap(err))
	}
	if st.IsDir() {
		return nil, fmt.Errorf("%s: is a directory", p)
	}
	if !st.Mode().IsRegular() {
		// A device or a pipe (/dev/zero) has no size to check and may never end.
		return nil, fmt.Errorf("%s: not a regular file", p)
	}
	if st.Size() > maxInput {
		return nil, fmt.Errorf("%s: %d bytes is larger than the %d-byte limit", p, st.Size(), maxInput)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, errors.Unwrap(err))
	}
	return data, nil
}
