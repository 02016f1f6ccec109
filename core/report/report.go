// Package report collects per-request metrics during a replay and renders the
// report: the summary map of the reference (§8.8), per-worker counters, a
// bucketed time series for plots, and optional per-request records.
package report

// Report is the result of one prediction.
type Report struct {
	Summary map[string]float64 `json:"summary"`
}

// JSON renders the report deterministically (sorted keys, fixed layout).
func (r *Report) JSON() ([]byte, error) { return nil, nil }

// SetWallTime records the simulator's wall-clock time (measured by the front
// end; the core never reads the clock) and the rates derived from it.
func (r *Report) SetWallTime(ms float64) {}

// Table renders the AIPerf-style console table.
func (r *Report) Table() string { return "" }

// RequestsJSONL renders the per-request records (empty unless captured).
func (r *Report) RequestsJSONL() []byte { return nil }
