package recommend

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/dynosim/dynosim-web/core/config"
	"github.com/dynosim/dynosim-web/core/report"
	"github.com/dynosim/dynosim-web/core/report/schema"
	"github.com/dynosim/dynosim-web/core/sim"
)

// Evaluator runs one prediction: the space's Base config with sets. Its
// two implementations are the local simulator (Local) and the Worker over
// HTTP (the CLI's --remote, the page's service option). It must be safe
// for concurrent use.
type Evaluator interface {
	// Predict returns the report, or the error and its reason category
	// (Category of the error, which a remote evaluator reads from the
	// answer).
	Predict(sets []string) (*report.Report, string, error)
}

// Unavailable wraps an Evaluator error that is no verdict on the
// candidate: the evaluator itself could not be reached or did not answer
// (the Worker behind the CLI's --remote: connection refused, no answer
// within the trial's deadline, an answer that is not a report). Search
// stops at the first one and returns it: a ledger of such failures would
// say nothing about the candidates, and every later trial would wait on
// the same dead service.
type Unavailable struct{ Err error }

func (u *Unavailable) Error() string { return u.Err.Error() }
func (u *Unavailable) Unwrap() error { return u.Err }

// Entry is one candidate of the ledger.
type Entry struct {
	ID             string            `json:"candidate_id"` // candidate-NNNNNN, in evaluation order
	Trial          int               `json:"trial"`
	Index          int               `json:"index"` // in the space
	Status         string            `json:"status"`
	ReasonCategory string            `json:"reason_category,omitempty"`
	Reason         string            `json:"reason,omitempty"`
	Config         map[string]string `json:"config"` // each searched path's value
	Sets           []string          `json:"prediction_sets"`
	UsedGPUs       int               `json:"used_gpus"`
	Score          *float64          `json:"score"` // higher is better; null: none
	Metrics        report.Summary    `json:"metrics"`
	Objectives     []float64         `json:"objectives,omitempty"` // pareto: tok/s/GPU, tok/s/user
	CacheHit       bool              `json:"cache_hit"`
	// Issue 32 item 2 (best.go): the rank among feasible candidates (0:
	// unranked), the deployment in words, whether the GPUs are within the
	// budget (kept apart from the SLA), whether the run meets the SLA and
	// the fraction of its completed requests that do, and equal candidates
	// (same score, GPUs and metrics) listed on the better-ranked one.
	Rank           int      `json:"rank,omitempty"`
	Label          string   `json:"label,omitempty"`
	WithinBudget   bool     `json:"within_budget"`
	MeetsSLA       bool     `json:"meets_sla"`
	SLAMetFraction *float64 `json:"sla_met_fraction"`
	Equal          []string `json:"equal_candidates,omitempty"`
	SameAs         string   `json:"same_as,omitempty"`

	tie float64 // min_gpus: goodput, then −E2E, breaks ties
}

// Ledger is a search's result in AISimulate's SweepResult shape.
type Ledger struct {
	SchemaVersion string     `json:"schema_version"`
	Target        string     `json:"target"`
	Pick          *Pick      `json:"best,omitempty"` // best.go
	Counts        Counts     `json:"counts"`
	Candidates    []Entry    `json:"candidates"`
	Views         Views      `json:"views"`
	Provenance    Provenance `json:"provenance"`
}

// Counts count the ledger's candidates by status.
type Counts struct {
	Evaluated  int `json:"evaluated"`
	Feasible   int `json:"feasible"`
	Infeasible int `json:"infeasible"`
	Failed     int `json:"failed"`
	CacheHits  int `json:"cache_hits"`
}

// Views are the ledger's answers: the best candidates, or the Pareto front.
type Views struct {
	TopN        []string `json:"top_n,omitempty"`
	ParetoFront []string `json:"pareto_front,omitempty"`
}

// Provenance says how the ledger was made.
type Provenance struct {
	Strategy     string `json:"strategy"` // exhaustive | random | bayesian
	Seed         uint64 `json:"seed"`
	MaxTrials    int    `json:"max_trials"`
	SpaceSize    int    `json:"space_size"`
	Dims         []Dim  `json:"dimensions"`
	ConfigSHA256 string `json:"config_sha256"` // of the base config
}

// MaxExhaustive bounds an exhaustive search (optimizer.max_trials bounds
// the others).
const MaxExhaustive = 100_000

// Search runs the search of sp with parallel concurrent evaluations;
// onEntry (may be nil) sees each entry as the ledger grows, in ledger
// order.
//
// p, prepared with PrepareSweep from Base, tells what each candidate's
// config is (its GPUs, its traffic) before it runs.
//
// An evaluation that finds the evaluator Unavailable ends the search: no
// further trial starts, and the error (naming the trial) is returned
// instead of a ledger.
func Search(sp *Space, p *sim.Prepared, ev Evaluator, parallel int, onEntry func(Entry)) (*Ledger, error) {
	parallel = max(parallel, 1)
	s, strategy := newSearcher(sp)
	sum := sha256.Sum256(sp.Base)
	l := &Ledger{SchemaVersion: "1.0", Target: sp.Spec.Optimization.Target, Provenance: Provenance{
		Strategy: strategy, Seed: sp.Spec.Optimizer.Seed, MaxTrials: sp.Spec.Optimizer.MaxTrials,
		SpaceSize: sp.Size(), Dims: sp.Dims, ConfigSHA256: hex.EncodeToString(sum[:]),
	}}
	trials := min(sp.Spec.Optimizer.MaxTrials, sp.Size())
	if strategy == "exhaustive" {
		if sp.Size() > MaxExhaustive {
			return nil, fmt.Errorf("%s: optimizer.algorithm: exhaustive search of %d candidates is more than %d trials; use bayesian or random with max_trials", sp.Name, sp.Size(), MaxExhaustive)
		}
		trials = sp.Size()
	}
	cache := map[int]int{} // space index → ledger position
	for len(l.Candidates) < trials {
		batch := s.next(l.Candidates, min(s.batch(len(l.Candidates)), trials-len(l.Candidates)))
		if len(batch) == 0 {
			break
		}
		out, err := runBatch(sp, p, ev, parallel, batch, l.Candidates, cache)
		if err != nil {
			return nil, err
		}
		for k, i := range batch {
			e := out[k]
			e.Trial = len(l.Candidates) + 1
			e.ID = fmt.Sprintf("candidate-%06d", e.Trial)
			if !e.CacheHit {
				cache[i] = len(l.Candidates)
			}
			l.Candidates = append(l.Candidates, e)
			if onEntry != nil {
				onEntry(e)
			}
		}
	}
	l.finish(sp)
	return l, nil
}

// runBatch evaluates the candidates of batch (space indexes) on parallel
// goroutines and returns their entries by place: a candidate already in
// the ledger (cache: space index → position in done) or earlier in the
// batch is a cache hit, not run again. An Unavailable evaluator stops it
// starting trials; the error is then the batch's first such, whichever
// finished first.
func runBatch(sp *Space, p *sim.Prepared, ev Evaluator, parallel int, batch []int, done []Entry, cache map[int]int) ([]Entry, error) {
	out := make([]Entry, len(batch))
	errs := make([]error, len(batch))      // Unavailable, by place in the batch
	var down atomic.Bool                   // an evaluation found the evaluator unavailable
	first := make(map[int]int, len(batch)) // space index → its first place in the batch
	var wg sync.WaitGroup
	sem := make(chan struct{}, parallel)
	for k, i := range batch {
		if at, ok := cache[i]; ok {
			out[k] = done[at]
			out[k].CacheHit = true
			continue
		}
		if _, ok := first[i]; ok { // twice in one batch: run once
			continue
		}
		first[i] = k
		sem <- struct{}{}
		if down.Load() { // start no trial on a service known to be down
			<-sem
			break
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			out[k], errs[k] = evaluate(sp, p, ev, sp.At(i))
			if errs[k] != nil {
				down.Store(true)
			}
		}()
	}
	wg.Wait()
	for k, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("%s: trial %d (%s): %w", sp.Name, len(done)+k+1, strings.Join(sp.Sets(sp.At(batch[k])), " "), err)
		}
	}
	for k, i := range batch {
		if j, ok := first[i]; ok && j != k {
			out[k] = out[j]
			out[k].CacheHit = true
		}
	}
	return out, nil
}

// evaluate runs one candidate and judges it. Its error is only ever an
// Unavailable evaluator's; any other failure is the entry's.
func evaluate(sp *Space, p *sim.Prepared, ev Evaluator, c Candidate) (Entry, error) {
	sets := sp.Sets(c)
	e := Entry{Index: sp.Index(c), Config: map[string]string{}, Sets: sets, Metrics: report.Summary{}}
	for d, v := range c {
		e.Config[sp.Dims[d].Path] = sp.Dims[d].Values[v]
	}
	fail := func(status, category, reason string) (Entry, error) {
		e.Status, e.ReasonCategory, e.Reason = status, category, reason
		return e, nil
	}
	cfg, err := p.Config(sets)
	if err != nil {
		if c := Category(err); c == ReasonTopology {
			return fail(Infeasible, c, err.Error())
		}
		return fail(Failed, ReasonMaterialization, err.Error())
	}
	e.UsedGPUs = GPUs(&cfg)
	e.Label = Label(&cfg)
	lim := sp.Spec.Optimization.Limits
	if e.UsedGPUs > lim.MaxCandidateGPUs || e.UsedGPUs < lim.MinCandidateGPUs {
		return fail(Infeasible, ReasonGPUBudget, fmt.Sprintf("%d GPUs, outside the budget [%d, %d]", e.UsedGPUs, lim.MinCandidateGPUs, lim.MaxCandidateGPUs))
	}
	e.WithinBudget = true
	var rep *report.Report
	var category string
	rate := math.NaN()
	if sp.Spec.Optimization.Target == "max_rate" {
		rep, rate, category, err = maxRate(sp, ev, &cfg, sets)
		if err == nil {
			e.Sets = append(slices.Clip(sets), rateKnob(&cfg)+"="+fmt.Sprint(rate))
		}
	} else {
		rep, category, err = ev.Predict(sets)
	}
	if u := (*Unavailable)(nil); errors.As(err, &u) {
		return Entry{}, u
	}
	if err != nil {
		status := Failed
		if category == ReasonKVCapacity || category == ReasonTopology || category == ReasonSLA {
			status = Infeasible
		}
		return fail(status, category, err.Error())
	}
	e.Metrics = metrics(rep.Summary)
	if !math.IsNaN(rate) {
		e.Metrics[schema.MaxRate] = rate
	}
	if e.Metrics[schema.CompletedRequests] == 0 {
		return fail(Infeasible, ReasonNoSamples, "no request completed")
	}
	why := slaBreach(&sp.Spec, rep.SLA, e.Metrics)
	judgeSLA(rep.Verdict, why, &e)
	if why != "" && sp.Spec.Optimization.Target != "max_rate" {
		return fail(Infeasible, ReasonSLA, why)
	}
	e.Status = Feasible
	target := sp.Spec.Optimization.Target
	if s := score(target, e.Metrics); !math.IsNaN(s) {
		e.Score = &s
	}
	switch target {
	case "min_gpus":
		e.tie = value(e.Metrics, schema.GoodputRequestThroughputRPS)*1e6 - e.Metrics[schema.E2E.Key(schema.Mean)]
	case "pareto":
		e.Objectives = []float64{e.Metrics[schema.OutputThroughputPerGPUTokS], e.Metrics[schema.PerUser.Key(schema.Mean)]}
	}
	return e, nil
}

// GPUs is the candidate's GPU count: every role's replicas × tensor ×
// pipeline × attention_data.
func GPUs(cfg *config.Config) int {
	w := &cfg.Engine.Workers
	if cfg.Engine.Mode == "disaggregated" {
		return w.Prefill.Parallelism.Replicas*w.Prefill.GPUs() + w.Decode.Parallelism.Replicas*w.Decode.GPUs()
	}
	return w.Aggregated.Parallelism.Replicas * w.Aggregated.GPUs()
}

// finish counts the ledger and builds its view.
func (l *Ledger) finish(sp *Space) {
	var ranked []Entry
	for _, e := range l.Candidates {
		switch {
		case e.CacheHit:
			l.Counts.CacheHits++
			continue
		case e.Status == Feasible:
			l.Counts.Feasible++
			ranked = append(ranked, e)
		case e.Status == Infeasible:
			l.Counts.Infeasible++
		default:
			l.Counts.Failed++
		}
		l.Counts.Evaluated++
	}
	if l.Target == "pareto" {
		l.Views.ParetoFront = paretoFront(ranked)
	}
	slices.SortStableFunc(ranked, func(a, b Entry) int { return cmpScore(b, a) })
	if l.Target != "pareto" {
		for _, e := range ranked[:min(len(ranked), sp.Spec.Optimization.TopN)] {
			l.Views.TopN = append(l.Views.TopN, e.ID)
		}
	}
	l.rankAndPick(sp, ranked)
}

// paretoFront is the ids of the candidates no other beats on both
// objectives (tok/s/GPU and tok/s/user), sorted by the last objective.
func paretoFront(es []Entry) []string {
	var front []Entry
	for _, a := range es {
		if len(a.Objectives) != 2 || math.IsNaN(a.Objectives[0]) || math.IsNaN(a.Objectives[1]) {
			continue
		}
		dominated := false
		for _, b := range es {
			if len(b.Objectives) == 2 && b.Objectives[0] >= a.Objectives[0] && b.Objectives[1] >= a.Objectives[1] &&
				(b.Objectives[0] > a.Objectives[0] || b.Objectives[1] > a.Objectives[1]) {
				dominated = true
				break
			}
		}
		if !dominated {
			front = append(front, a)
		}
	}
	slices.SortStableFunc(front, func(a, b Entry) int {
		switch {
		case a.Objectives[1] < b.Objectives[1]:
			return -1
		case a.Objectives[1] > b.Objectives[1]:
			return 1
		}
		return a.Index - b.Index
	})
	ids := make([]string, len(front))
	for i, e := range front {
		ids[i] = e.ID
	}
	return ids
}

// Best is the ledger's best feasible entry (the first of its view), nil
// when none is feasible.
func (l *Ledger) Best() *Entry {
	ids := l.Views.TopN
	if len(ids) == 0 {
		ids = l.Views.ParetoFront
	}
	if len(ids) == 0 {
		return nil
	}
	for i := range l.Candidates {
		if l.Candidates[i].ID == ids[0] {
			return &l.Candidates[i]
		}
	}
	return nil
}
