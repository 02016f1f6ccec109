package measured

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/dynosim/dynosim-web/core/report/schema"
)

// vllmScalars are vLLM's run-level values we keep, with their factor to
// the report's unit.
var vllmScalars = []struct {
	key, report string
	scale       float64
}{
	{"duration", schema.DurationMs, 1000}, // seconds
	{"completed", schema.CompletedRequests, 1},
	{"total_input_tokens", schema.TotalInputTokens, 1},
	{"total_output_tokens", schema.TotalOutputTokens, 1},
	{"request_throughput", schema.RequestThroughputRPS, 1},
	{"output_throughput", schema.OutputThroughputTokS, 1},
	{"total_token_throughput", schema.TotalThroughputTokS, 1},
}

// vllmFamilies maps vLLM's metric names to the report's. vLLM's itl is
// every gap of every request and its tpot is per request, as ours.
var vllmFamilies = map[string]schema.Family{"ttft": schema.TTFT, "tpot": schema.TPOT, "itl": schema.ITL, "e2el": schema.E2E}

// reportPercentiles are the percentiles the report has keys for.
var reportPercentiles = []string{"75", "90", "95", "99"}

// parseVLLM reads a `vllm bench serve --save-result` JSON: statistics
// {mean,median,std,pNN}_{ttft,tpot,itl,e2el}_ms (ms), run totals, and with
// --save-detailed the per-request lists input_lens, output_lens, ttfts,
// itls (seconds) and errors; newer vLLM adds latencies (seconds) and
// start_times (seconds of time.perf_counter; vllm-project/vllm#32667,
// 2026-01).
func parseVLLM(r *Run, name string, top map[string]json.RawMessage) error {
	r.rate, _, _ = number(top["request_rate"]) // "inf" is not a number: no rate
	if c, ok, _ := number(top["max_concurrency"]); ok && c >= 1 && c == math.Trunc(c) {
		r.concurrency = int(min(c, 1e9))
	}
	r.startTimes = hasKey(top, "start_times")
	for _, s := range vllmScalars {
		v, ok, err := measure(top[s.key])
		if err != nil {
			return fmt.Errorf("%s: %s: %v", name, s.key, err)
		}
		if !ok {
			continue
		}
		r.Summary[s.report] = v * s.scale
	}
	keys := make([]string, 0, len(top))
	for k := range top {
		keys = append(keys, k)
	}
	slices.Sort(keys) // errors and quantile order must not depend on map order
	for _, k := range keys {
		stem, ok := strings.CutSuffix(k, "_ms")
		if !ok {
			continue
		}
		stat, metric, ok := strings.Cut(stem, "_")
		family := vllmFamilies[metric]
		if !ok || family == "" {
			continue
		}
		q := -1.0
		switch {
		case stat == "mean" || stat == "std":
		case stat == "median":
			q = 0.5
		case strings.HasPrefix(stat, "p"):
			p, err := strconv.ParseFloat(stat[1:], 64)
			if err != nil || p < 0 || p > 100 {
				continue
			}
			q = p / 100
		default:
			continue
		}
		v, ok, err := measure(top[k])
		if err != nil {
			return fmt.Errorf("%s: %s: %v", name, k, err)
		}
		if !ok {
			continue
		}
		switch {
		// vLLM's statistic names (mean, std, median, pNN) are the
		// report's.
		case stat == "mean" || stat == "std" || stat == "median":
			r.Summary[family.Key(schema.Stat(stat))] = v
		case stat == "p50":
			if _, ok := top["median_"+metric+"_ms"]; !ok {
				r.Summary[family.Key(schema.Median)] = v
			}
		case slices.Contains(reportPercentiles, stat[1:]):
			r.Summary[family.Key(schema.Stat(stat))] = v
		}
		if q >= 0 && !(stat == "p50" && hasKey(top, "median_"+metric+"_ms")) {
			r.pcts[family] = append(r.pcts[family], qv{q, v})
		}
	}
	for _, pts := range r.pcts {
		slices.SortFunc(pts, func(a, b qv) int { return cmpFloat(a.q, b.q) })
	}
	return parseVLLMDetail(r, name, top)
}

func hasKey(m map[string]json.RawMessage, k string) bool { _, ok := m[k]; return ok }

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// parseVLLMDetail reads the --save-detailed lists into requests. Failed
// requests (a non-empty errors entry) are left out: they have no
// latencies and produced no output the simulator could reproduce.
//
// Arrivals: start_times when the result has them (when each
// request was sent, after any --max-concurrency wait); else, for a finite
// --request-rate, evenly spaced at 1/rate (vLLM drew Poisson or gamma gaps
// with a seed we cannot replay, so this keeps only the mean rate); else
// (rate inf) every request at 0 ms, which is what vLLM did without
// --max-concurrency. With --max-concurrency and no start_times the run was
// a closed loop: replay the trace with traffic.load.type concurrency.
func parseVLLMDetail(r *Run, name string, top map[string]json.RawMessage) error {
	if !hasKey(top, "input_lens") && !hasKey(top, "output_lens") {
		return nil
	}
	d, err := readVLLMLists(name, top)
	if err != nil {
		return err
	}
	t0 := math.Inf(1)
	for _, s := range d.starts {
		if !math.IsNaN(s) {
			t0 = min(t0, s)
		}
	}
	type rec struct {
		start float64
		req   Request
	}
	var recs []rec
	var isl, osl []float64
	for i := range d.ins {
		if d.errs != nil && d.errs[i] != nil && *d.errs[i] != "" {
			continue
		}
		q, err := d.request(r, name, i)
		if err != nil {
			return err
		}
		var at float64
		switch {
		case d.starts != nil && !math.IsNaN(d.starts[i]):
			at = (d.starts[i] - t0) * 1000
		case d.starts == nil && r.rate > 0:
			at = float64(i) * 1000 / r.rate
		}
		recs = append(recs, rec{at, q})
		isl, osl = append(isl, float64(q.InputTokens)), append(osl, float64(q.OutputTokens))
	}
	slices.SortStableFunc(recs, func(a, b rec) int { return cmpFloat(a.start, b.start) })
	for _, q := range recs {
		q.req.StartMs = q.start
		r.Requests = append(r.Requests, q.req)
	}
	// The result states no length statistics; the lists give them.
	putDist(r.Summary, schema.InputLen, isl)
	putDist(r.Summary, schema.OutputLen, osl)
	return nil
}

// vllmLists are the per-request lists of a --save-detailed result, one
// value per request (nil: the result lacks the list). Times are seconds.
type vllmLists struct {
	ins, outs           []int
	ttfts, lats, starts []float64
	itls                [][]*float64
	errs                []*string
}

// readVLLMLists reads and checks the per-request lists of top.
func readVLLMLists(name string, top map[string]json.RawMessage) (*vllmLists, error) {
	var d vllmLists
	var err error
	if d.ins, err = intList(name, "input_lens", top["input_lens"]); err != nil {
		return nil, err
	}
	if d.outs, err = intList(name, "output_lens", top["output_lens"]); err != nil {
		return nil, err
	}
	n := len(d.ins)
	if len(d.outs) != n {
		return nil, fmt.Errorf("%s: output_lens: %d values, want %d (one per request, as input_lens)", name, len(d.outs), n)
	}
	if d.ttfts, err = floatList(name, "ttfts", top["ttfts"], n); err != nil {
		return nil, err
	}
	if d.lats, err = floatList(name, "latencies", top["latencies"], n); err != nil {
		return nil, err
	}
	if d.starts, err = floatList(name, "start_times", top["start_times"], n); err != nil {
		return nil, err
	}
	if raw := top["itls"]; len(bytes.TrimSpace(raw)) > 0 && string(bytes.TrimSpace(raw)) != "null" {
		if err := json.Unmarshal(raw, &d.itls); err != nil {
			return nil, fmt.Errorf("%s: itls: must be a list of lists of numbers (seconds)", name)
		}
		if len(d.itls) != n {
			return nil, fmt.Errorf("%s: itls: %d values, want %d (one per request, as input_lens)", name, len(d.itls), n)
		}
	}
	if raw := top["errors"]; len(bytes.TrimSpace(raw)) > 0 && string(bytes.TrimSpace(raw)) != "null" {
		if err := json.Unmarshal(raw, &d.errs); err != nil {
			return nil, fmt.Errorf("%s: errors: must be a list of strings", name)
		}
		if len(d.errs) != n {
			return nil, fmt.Errorf("%s: errors: %d values, want %d (one per request, as input_lens)", name, len(d.errs), n)
		}
	}
	return &d, nil
}

// request is request i's measured latencies (ms); its inter-token gaps go
// to r's ITL samples.
func (d *vllmLists) request(r *Run, name string, i int) (Request, error) {
	q := Request{InputTokens: d.ins[i], OutputTokens: d.outs[i], TTFTMs: math.NaN(), ITLMs: math.NaN(), E2EMs: math.NaN()}
	if d.ttfts != nil {
		q.TTFTMs = d.ttfts[i] * 1000
	}
	var sum float64
	gapsOK := d.itls != nil
	if gapsOK {
		for j, g := range d.itls[i] {
			if g == nil {
				gapsOK = false
				continue
			}
			if err := check(*g); err != nil {
				return q, fmt.Errorf("%s: itls[%d][%d]: %v", name, i, j, err)
			}
			r.gaps = append(r.gaps, *g*1000)
			sum += *g * 1000
		}
	}
	switch {
	case d.lats != nil && !math.IsNaN(d.lats[i]):
		q.E2EMs = d.lats[i] * 1000
	case gapsOK:
		q.E2EMs = q.TTFTMs + sum // NaN without a TTFT
	}
	if q.OutputTokens >= 2 {
		q.ITLMs = (q.E2EMs - q.TTFTMs) / float64(q.OutputTokens-1)
	}
	return q, nil
}

// intList reads a list of token counts.
func intList(name, key string, raw json.RawMessage) ([]int, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, fmt.Errorf("%s: %s: missing (the detailed result has input_lens and output_lens)", name, key)
	}
	var xs []*float64
	if err := json.Unmarshal(raw, &xs); err != nil {
		return nil, fmt.Errorf("%s: %s: must be a list of token counts", name, key)
	}
	out := make([]int, len(xs))
	for i, p := range xs {
		if p == nil || *p != math.Trunc(*p) || *p < 0 || *p > maxTokens {
			return nil, fmt.Errorf("%s: %s[%d]: must be an integer in [0, %d]", name, key, i, maxTokens)
		}
		out[i] = int(*p)
	}
	return out, nil
}

// floatList reads an optional per-request list of seconds (null entries
// are NaN); nil when absent.
func floatList(name, key string, raw json.RawMessage, n int) ([]float64, error) {
	if b := bytes.TrimSpace(raw); len(b) == 0 || string(b) == "null" {
		return nil, nil
	}
	var xs []*float64
	if err := json.Unmarshal(raw, &xs); err != nil {
		return nil, fmt.Errorf("%s: %s: must be a list of numbers (seconds)", name, key)
	}
	if len(xs) != n {
		return nil, fmt.Errorf("%s: %s: %d values, want %d (one per request, as input_lens)", name, key, len(xs), n)
	}
	out := make([]float64, n)
	for i, p := range xs {
		if p == nil {
			out[i] = math.NaN()
			continue
		}
		if err := check(*p); err != nil {
			return nil, fmt.Errorf("%s: %s[%d]: %v", name, key, i, err)
		}
		out[i] = *p
	}
	return out, nil
}
