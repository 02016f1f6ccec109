// Package sim is the one entry point every front end (CLI, browser, Worker)
// calls: it loads a config, its workload and optional profile from bytes, runs
// the replay and returns the report. It does no I/O of its own: files named
// in the config are read through Inputs.ReadFile, which the front end owns.
package sim

import (
	"errors"

	"github.com/dynosim/dynosim-web/core/report"
)

// Inputs are the raw inputs of one prediction.
type Inputs struct {
	Config     []byte   // YAML text; empty means "{}"
	ConfigName string   // names the config in errors, e.g. "config.yaml"
	Sets       []string // PATH=VALUE overrides applied left to right (--set)

	Trace     []byte // optional: replaces traffic.source.paths
	TraceName string // names the trace in errors; its extension picks the format

	Profile     []byte // optional .npz: selects profile timing
	ProfileName string

	// ReadFile reads a file named in the config (trace paths, profile path).
	// Nil means the front end has no file system: such a config is an error.
	ReadFile func(path string) ([]byte, error)

	CapturePerRequest bool   // keep per-request records in the report
	Limits            Limits // zero means unlimited
}

// Limits protect shared services from runs that are too large.
type Limits struct {
	MaxRequests int // requests in the workload
	MaxPasses   int // engine passes in the replay
}

// Progress is reported periodically during a run.
type Progress struct {
	SimTimeMs float64 // virtual clock
	Done      int     // requests finished (completed or rejected)
	Total     int     // requests in the workload (0 if unknown)
}

// ErrCanceled is returned when the progress callback asks to stop.
var ErrCanceled = errors.New("canceled")

// Predict runs one prediction. progress may be nil; when it returns false the
// run stops with ErrCanceled.
func Predict(in Inputs, progress func(Progress) bool) (*report.Report, error) {
	return nil, errors.New("not implemented yet")
}
