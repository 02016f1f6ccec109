package main

import (
	"encoding/json"
	"errors"
	"math"
	"strconv"

	"github.com/dynosim/dynosim-web/core/report/metrics"
)

// DeployCard is the Recommend view's answer (issue 32 item 7): the
// search's best deployment (recommendation.json's "best", the CLI's
// "Deploy:" line) with its headline figures and its deploy files.
type DeployCard struct {
	ID, Label string
	MeetsSLA  bool
	Flag      string   // meets the SLA, or only comes closest
	Notes     []string // the pick's note and edge-of-range warnings
	Figures   []DeployFigure
	Launch    string // launch.sh ("" when core/deploy cannot express it)
	DGD       string // dgd.yaml
	FilesNote string // where the files come from, or why there are none
}

// DeployFigure is one headline figure with its unit.
type DeployFigure struct{ Key, Name, Value string }

// DeployFile is one candidate's deploy files as the simulator renders them
// (wasm/browser/deploy.go: recommend --output-dir's deploy/NNNN).
type DeployFile struct{ ID, Dir, Launch, DGD, Error string }

// ledgerPick is the part of recommendation.json the card reads
// (core/recommend.Pick).
type ledgerPick struct {
	Best *struct {
		ID             string             `json:"candidate_id"`
		Label          string             `json:"label"`
		MeetsSLA       bool               `json:"meets_sla"`
		SLAMetFraction *float64           `json:"sla_met_fraction"`
		WithinBudget   bool               `json:"within_budget"`
		Headline       map[string]float64 `json:"headline"`
		Note           string             `json:"note"`
		Warnings       []string           `json:"warnings"`
	} `json:"best"`
}

// newDeployCard builds the card from a search's recommendation.json and
// its deploy files; an error when the ledger names no best (no candidate
// completed a request).
func newDeployCard(ledgerJSON string, files []DeployFile) (*DeployCard, error) {
	var l ledgerPick
	if err := json.Unmarshal([]byte(ledgerJSON), &l); err != nil {
		return nil, err
	}
	b := l.Best
	if b == nil {
		return nil, errors.New("no candidate completed a request: nothing to deploy")
	}
	c := &DeployCard{ID: b.ID, Label: b.Label, MeetsSLA: b.MeetsSLA, Flag: "Meets the SLA at p99 (the top-ranked candidate that does)"}
	if !b.MeetsSLA {
		c.Flag = "Does NOT meet the SLA: no candidate does; this one comes closest"
	}
	if !b.WithinBudget {
		c.Flag += "; outside the GPU budget"
	}
	if b.Note != "" {
		c.Notes = append(c.Notes, "Note: "+b.Note+".")
	}
	for _, w := range b.Warnings {
		c.Notes = append(c.Notes, "Warning: "+w+".")
	}
	h := b.Headline
	within := "— (no SLA)"
	if f := b.SLAMetFraction; f != nil {
		within = strconv.FormatFloat(100**f, 'f', 1, 64) + " % of requests"
	}
	c.Figures = []DeployFigure{
		{"ttft", "p99 TTFT", fmtMs(h["p99_ttft_ms"])},
		{"itl", "p99 ITL", fmtMs(h["p99_itl_ms"])},
		{"within", "Within SLA", within},
		{"gpus", "GPUs", metrics.Format(h["gpus"])},
		{"throughput", "Throughput", metrics.Format(math.Round(h["output_throughput_tok_s"])) + " tok/s (" +
			strconv.FormatFloat(h["output_throughput_per_gpu_tok_s"], 'f', 1, 64) + " tok/s/GPU)"},
	}
	c.FilesNote = "No deploy files for " + b.ID + "."
	for _, f := range files {
		if f.ID != b.ID {
			continue
		}
		switch {
		case f.Error != "":
			c.FilesNote = "No deploy files: " + f.Error
		case f.Dir != "":
			c.Launch, c.DGD = f.Launch, f.DGD
			c.FilesNote = "The files recommend --output-dir writes to " + f.Dir + "/ (" + b.ID + "); complete the image and model path (docs/deploy.md)."
		default:
			c.Launch, c.DGD = f.Launch, f.DGD
			c.FilesNote = "Rendered for " + b.ID + "; complete the image and model path (docs/deploy.md)."
		}
	}
	return c, nil
}
