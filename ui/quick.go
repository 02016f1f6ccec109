package main

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// The quick form (issue 32 item 6): the common knobs as fields above the
// config editor. A field's edit changes the YAML the editor shows, in
// place (quickyaml.go); the fields read the YAML back on every change.
// The YAML stays the one source of truth: the form holds no state.

// QuickField is one field as shown: its value, or why it is disabled.
type QuickField struct {
	Value    string
	Disabled bool
	Title    string // a tooltip: what the field sets, or why it cannot
}

// QuickForm is the form read from a config.
type QuickForm struct {
	Disagg                                        bool
	Model, GPU, Tensor, Replicas, Prefill, Decode QuickField
	Router, ISL, OSL, Rate, SLATTFT, SLAITL       QuickField
	RateLabel                                     string // "Rate (req/s)" or "Concurrency"
	Models, GPUs                                  []string
	Err                                           string // the YAML does not read: every field is disabled
}

// quickKeys are the form's fields (data-testid "quick-" + key).
var quickKeys = []string{"model", "gpu", "tensor", "replicas", "prefill-replicas", "decode-replicas", "router", "isl", "osl", "rate", "sla-ttft", "sla-itl"}

// Field is the field of key.
func (f *QuickForm) Field(key string) *QuickField {
	return map[string]*QuickField{"model": &f.Model, "gpu": &f.GPU, "tensor": &f.Tensor, "replicas": &f.Replicas,
		"prefill-replicas": &f.Prefill, "decode-replicas": &f.Decode, "router": &f.Router, "isl": &f.ISL, "osl": &f.OSL,
		"rate": &f.Rate, "sla-ttft": &f.SLATTFT, "sla-itl": &f.SLAITL}[key]
}

// quickRouters are router.policy's values.
var quickRouters = []string{"round_robin", "random", "kv_router"}

// quickDefaultRate is the Poisson rate a trace workload switched to a
// synthetic one starts from.
const quickDefaultRate = 10

// quickRole is the part of a worker role the form reads.
type quickRole struct {
	Hardware    string `yaml:"hardware"`
	Parallelism struct {
		Replicas int `yaml:"replicas"`
		Tensor   int `yaml:"tensor"`
	} `yaml:"parallelism"`
}

// quickConfig is the part of the config the form reads, decoded leniently
// (unknown keys ignored; the editor's validator reports them) over the
// defaults of core/config.Default (TestItem32_6DefaultsMatchConfig).
type quickConfig struct {
	Traffic struct {
		Source struct {
			Type         string    `yaml:"type"`
			InputTokens  yaml.Node `yaml:"input_tokens"`
			OutputTokens yaml.Node `yaml:"output_tokens"`
		} `yaml:"source"`
		Load struct {
			Type              string  `yaml:"type"`
			Concurrency       int     `yaml:"concurrency"`
			RequestsPerSecond float64 `yaml:"requests_per_second"`
			IntervalMs        float64 `yaml:"interval_ms"`
		} `yaml:"load"`
	} `yaml:"traffic"`
	Engine struct {
		Mode     string `yaml:"mode"`
		Model    string `yaml:"model"`
		Hardware string `yaml:"hardware"`
		Workers  struct {
			Aggregated quickRole `yaml:"aggregated"`
			Prefill    quickRole `yaml:"prefill"`
			Decode     quickRole `yaml:"decode"`
		} `yaml:"workers"`
	} `yaml:"engine"`
	Router struct {
		Policy string `yaml:"policy"`
	} `yaml:"router"`
	Evaluation struct {
		SLA struct {
			TTFTMs float64 `yaml:"ttft_ms"`
			ITLMs  float64 `yaml:"itl_ms"`
			E2EMs  float64 `yaml:"e2e_ms"`
		} `yaml:"sla"`
	} `yaml:"evaluation"`
}

func quickDefaults() quickConfig {
	var q quickConfig
	q.Traffic.Source.Type = "synthetic"
	q.Traffic.Source.InputTokens = *scalar("!!int", "1024")
	q.Traffic.Source.OutputTokens = *scalar("!!int", "128")
	q.Traffic.Load.Concurrency = 10
	q.Engine.Mode, q.Engine.Model, q.Engine.Hardware = "aggregated", "llama-3.1-8b", "h100_sxm"
	for _, r := range []*quickRole{&q.Engine.Workers.Aggregated, &q.Engine.Workers.Prefill, &q.Engine.Workers.Decode} {
		r.Parallelism.Replicas, r.Parallelism.Tensor = 1, 1
	}
	q.Router.Policy = "round_robin"
	return q
}

// readQuickConfig decodes text over the defaults.
func readQuickConfig(text string) (quickConfig, error) {
	q := quickDefaults()
	err := yaml.Unmarshal([]byte(text), &q)
	var te *yaml.TypeError
	if errors.As(err, &te) {
		err = nil // a value of the wrong kind keeps its default; the validator names it
	}
	return q, err
}

// tokenField is a synthetic length node read as the form shows it: its value,
// or its mean with what it is (dist: "" fixed, normal or uniform).
func tokenField(n *yaml.Node) (v float64, dist string, ok bool) {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Kind == yaml.ScalarNode {
		x, err := strconv.Atoi(n.Value)
		return float64(x), "", err == nil
	}
	if n.Kind != yaml.MappingNode {
		return 0, "", false
	}
	get := func(key string) (float64, bool) {
		if _, c := child(n, key); c != nil && c.Kind == yaml.ScalarNode {
			x, err := strconv.ParseFloat(c.Value, 64)
			return x, err == nil && !math.IsNaN(x)
		}
		return 0, false
	}
	if m, ok := get("mean"); ok {
		return m, "normal", true
	}
	lo, ok1 := get("min")
	hi, ok2 := get("max")
	return (lo + hi) / 2, "uniform", ok1 && ok2
}

func fnum(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

// numScalar is a number's node, tagged as YAML reads its text back (a
// whole number is an !!int, which every float field takes).
func numScalar(text string) *yaml.Node {
	if _, err := strconv.Atoi(text); err == nil {
		return scalar("!!int", text)
	}
	return scalar("!!float", text)
}

// ReadQuick is the form for the config text. traceSelected: the page
// replays a trace (a sample or a file), whatever the config's source.
func ReadQuick(text string, traceSelected bool) QuickForm {
	f := QuickForm{Models: catalogModels, GPUs: catalogGPUs, RateLabel: "Rate (req/s)"}
	q, err := readQuickConfig(text)
	if err != nil {
		f.Err = "The YAML does not parse: the form follows once it does."
		for _, k := range quickKeys {
			*f.Field(k) = QuickField{Disabled: true, Title: f.Err}
		}
		return f
	}
	e := &q.Engine
	f.Disagg = e.Mode == "disaggregated"
	f.Model = QuickField{Value: e.Model, Title: "engine.model"}
	f.GPU = QuickField{Value: e.Hardware, Title: "engine.hardware"}
	if !slices.Contains(f.Models, e.Model) { // an HF config.json path or a new name
		f.Models = append(slices.Clip(f.Models), e.Model)
	}
	if !slices.Contains(f.GPUs, e.Hardware) {
		f.GPUs = append(slices.Clip(f.GPUs), e.Hardware)
	}
	w := &e.Workers
	roles := []*quickRole{&w.Aggregated}
	if f.Disagg {
		roles = []*quickRole{&w.Prefill, &w.Decode}
	}
	for _, r := range roles {
		if r.Hardware != "" && r.Hardware != e.Hardware {
			f.GPU.Title = fmt.Sprintf("engine.hardware (a role's own hardware, %s, overrides it: edit that in the YAML)", r.Hardware)
		}
	}
	if f.Disagg {
		f.Tensor = QuickField{Value: strconv.Itoa(w.Prefill.Parallelism.Tensor), Title: "engine.workers.prefill and decode .parallelism.tensor"}
		if w.Prefill.Parallelism.Tensor != w.Decode.Parallelism.Tensor {
			f.Tensor = QuickField{Disabled: true, Title: fmt.Sprintf("Prefill workers use TP%d, decode workers TP%d: edit them in the YAML",
				w.Prefill.Parallelism.Tensor, w.Decode.Parallelism.Tensor)}
		}
		f.Prefill = QuickField{Value: strconv.Itoa(w.Prefill.Parallelism.Replicas), Title: "engine.workers.prefill.parallelism.replicas"}
		f.Decode = QuickField{Value: strconv.Itoa(w.Decode.Parallelism.Replicas), Title: "engine.workers.decode.parallelism.replicas"}
	} else {
		f.Tensor = QuickField{Value: strconv.Itoa(w.Aggregated.Parallelism.Tensor), Title: "engine.workers.aggregated.parallelism.tensor"}
		f.Replicas = QuickField{Value: strconv.Itoa(w.Aggregated.Parallelism.Replicas), Title: "engine.workers.aggregated.parallelism.replicas"}
	}
	f.Router = QuickField{Value: q.Router.Policy, Title: "router.policy"}
	f.ISL, f.OSL = quickTokens(&q, true, traceSelected), quickTokens(&q, false, traceSelected)
	f.Rate, f.RateLabel = quickRate(&q, traceSelected)
	sla := q.Evaluation.SLA
	f.SLATTFT = QuickField{Value: slaValue(sla.TTFTMs), Title: "evaluation.sla.ttft_ms (empty: no TTFT target)"}
	f.SLAITL = QuickField{Value: slaValue(sla.ITLMs), Title: "evaluation.sla.itl_ms (empty: no ITL target)"}
	if sla.E2EMs > 0 {
		why := "evaluation.sla.e2e_ms is set, and cannot be combined with TTFT/ITL targets: edit the SLA in the YAML"
		f.SLATTFT, f.SLAITL = QuickField{Disabled: true, Title: why}, QuickField{Disabled: true, Title: why}
	}
	return f
}

func slaValue(ms float64) string {
	if ms > 0 {
		return fnum(ms)
	}
	return ""
}

// quickTokens is the ISL (in) or OSL field.
func quickTokens(q *quickConfig, in, traceSelected bool) QuickField {
	key, n := "output_tokens", &q.Traffic.Source.OutputTokens
	if in {
		key, n = "input_tokens", &q.Traffic.Source.InputTokens
	}
	path := "traffic.source." + key
	if traceSelected || q.Traffic.Source.Type == "trace" {
		return QuickField{Title: "The trace sets each request's lengths; a length typed here switches to a synthetic workload (" + path + ")"}
	}
	v, dist, ok := tokenField(n)
	switch {
	case !ok:
		return QuickField{Title: path + " is not a length the form reads: fix it in the YAML"}
	case dist == "normal":
		return QuickField{Value: fnum(v), Title: path + " is a normal distribution: this is its mean (its stddev stays)"}
	case dist == "uniform":
		return QuickField{Value: fnum(v), Disabled: true, Title: path + " is uniform {min, max}: this is its mean; edit the range in the YAML"}
	}
	return QuickField{Value: fnum(v), Title: path}
}

// quickRate is the rate field and its label: requests per second of a
// Poisson or constant-rate load, or the concurrency of a closed loop.
func quickRate(q *quickConfig, traceSelected bool) (QuickField, string) {
	l := &q.Traffic.Load
	trace := traceSelected || q.Traffic.Source.Type == "trace"
	switch {
	case l.Type == "concurrency" || l.Type == "" && !trace:
		return QuickField{Value: strconv.Itoa(l.Concurrency), Title: "traffic.load.concurrency: requests in flight (closed loop)"}, "Concurrency"
	case trace:
		return QuickField{Disabled: true, Title: "Arrivals follow the trace's timestamps (traffic.load.speedup scales them); type an ISL or OSL for a synthetic Poisson workload"}, "Rate (req/s)"
	case l.Type == "constant_rate" && l.IntervalMs > 0:
		return QuickField{Value: fnum(1000 / l.IntervalMs), Title: "traffic.load.interval_ms sets this constant rate; a rate typed here replaces it with requests_per_second"}, "Rate (req/s)"
	case l.Type == "poisson" || l.Type == "constant_rate":
		return QuickField{Value: fnum(l.RequestsPerSecond), Title: "traffic.load.requests_per_second (" + l.Type + " arrivals)"}, "Rate (req/s)"
	}
	return QuickField{Disabled: true, Title: "traffic.load.type " + l.Type + " needs a trace: fix it in the YAML"}, "Rate (req/s)"
}

// QuickEdit is the result of a field's edit.
type QuickEdit struct {
	YAML        string
	Note        string // what else changed, for the page to say
	ToSynthetic bool   // the workload became synthetic: the page drops its trace
}

// ApplyQuick sets field key to value in the config text.
func ApplyQuick(text, key, value string, traceSelected bool) (QuickEdit, error) {
	value = strings.TrimSpace(value)
	e, err := newYAMLEdit(text)
	if err != nil {
		return QuickEdit{}, err
	}
	q, err := readQuickConfig(text)
	if err != nil {
		return QuickEdit{}, err
	}
	var res QuickEdit
	role := "engine.workers.aggregated."
	switch key {
	case "model", "gpu", "router":
		path := map[string]string{"model": "engine.model", "gpu": "engine.hardware", "router": "router.policy"}[key]
		if value == "" {
			return res, fmt.Errorf("%s: choose a value", path)
		}
		err = e.set(path, scalar("!!str", value))
	case "tensor", "replicas", "prefill-replicas", "decode-replicas":
		var n int
		if n, err = positive(key, value); err != nil {
			return res, err
		}
		v := scalar("!!int", strconv.Itoa(n))
		switch {
		case key == "prefill-replicas":
			err = e.set("engine.workers.prefill.parallelism.replicas", v)
		case key == "decode-replicas":
			err = e.set("engine.workers.decode.parallelism.replicas", v)
		case key == "tensor" && q.Engine.Mode == "disaggregated":
			if err = e.set("engine.workers.prefill.parallelism.tensor", v); err == nil {
				err = e.set("engine.workers.decode.parallelism.tensor", scalar("!!int", v.Value))
			}
		default:
			err = e.set(role+"parallelism."+key, v)
		}
	case "isl", "osl":
		res, err = applyTokens(e, &q, key == "isl", value, traceSelected)
	case "rate":
		err = applyRate(e, &q, value, traceSelected)
	case "sla-ttft", "sla-itl":
		path := "evaluation.sla." + map[string]string{"sla-ttft": "ttft_ms", "sla-itl": "itl_ms"}[key]
		if value == "" || value == "0" {
			err = e.del(path)
			break
		}
		x, perr := strconv.ParseFloat(value, 64)
		if perr != nil || !(x > 0) || math.IsInf(x, 0) {
			return res, fmt.Errorf("%s: want milliseconds > 0 (or empty for none), got %q", path, value)
		}
		err = e.set(path, numScalar(fnum(x)))
	default:
		return res, fmt.Errorf("unknown quick field %q", key)
	}
	if err != nil {
		return res, err
	}
	res.YAML, err = e.result()
	return res, err
}

func positive(key, value string) (int, error) {
	n, err := strconv.Atoi(value)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%s: want a whole number ≥ 1, got %q", key, value)
	}
	return n, nil
}

// applyTokens sets a synthetic length. A normal distribution keeps its
// stddev and takes the value as its mean. A trace workload becomes
// synthetic (its format, paths and block size stay, so one word brings
// it back), with Poisson arrivals unless its load is a closed loop.
func applyTokens(e *yamlEdit, q *quickConfig, in bool, value string, traceSelected bool) (QuickEdit, error) {
	var res QuickEdit
	key, n, least := "output_tokens", &q.Traffic.Source.OutputTokens, 0
	if in {
		key, n, least = "input_tokens", &q.Traffic.Source.InputTokens, 1
	}
	path := "traffic.source." + key
	x, err := strconv.Atoi(value)
	if err != nil || x < least {
		return res, fmt.Errorf("%s: want a whole number of tokens ≥ %d, got %q", path, least, value)
	}
	trace := traceSelected || q.Traffic.Source.Type == "trace"
	_, dist, _ := tokenField(n)
	switch {
	case dist == "uniform" && !trace:
		return res, fmt.Errorf("%s is uniform {min, max}: edit the range in the YAML", path)
	case dist == "normal" && !trace:
		err = e.set(path+".mean", scalar("!!int", strconv.Itoa(x)))
	default:
		err = e.set(path, scalar("!!int", strconv.Itoa(x)))
	}
	if err != nil || !trace {
		return res, err
	}
	res.ToSynthetic = true
	res.Note = "Switched to a synthetic workload (traffic.source.type: synthetic; the trace is no longer replayed)"
	if q.Traffic.Source.Type != "synthetic" {
		if err := e.set("traffic.source.type", scalar("!!str", "synthetic")); err != nil {
			return res, err
		}
	}
	if l := q.Traffic.Load.Type; l == "" || l == "trace_timestamps" {
		if err := e.set("traffic.load.type", scalar("!!str", "poisson")); err != nil {
			return res, err
		}
		rate := q.Traffic.Load.RequestsPerSecond
		if rate <= 0 {
			rate = quickDefaultRate
			err = e.set("traffic.load.requests_per_second", scalar("!!int", strconv.Itoa(quickDefaultRate)))
		}
		res.Note += fmt.Sprintf(" with Poisson arrivals at %s req/s: set the rate above", fnum(rate))
	}
	res.Note += "."
	return res, err
}

// applyRate sets the concurrency of a closed loop, else the rate.
func applyRate(e *yamlEdit, q *quickConfig, value string, traceSelected bool) error {
	f, _ := quickRate(q, traceSelected)
	if f.Disabled {
		return errors.New(f.Title)
	}
	l := q.Traffic.Load.Type
	if l == "concurrency" || l == "" {
		n, err := positive("traffic.load.concurrency", value)
		if err != nil {
			return err
		}
		return e.set("traffic.load.concurrency", scalar("!!int", strconv.Itoa(n)))
	}
	x, err := strconv.ParseFloat(value, 64)
	if err != nil || !(x >= 1e-6) || math.IsInf(x, 0) {
		return fmt.Errorf("traffic.load.requests_per_second: want requests per second > 0, got %q", value)
	}
	if err := e.del("traffic.load.interval_ms"); err != nil {
		return err
	}
	return e.set("traffic.load.requests_per_second", numScalar(fnum(x)))
}
