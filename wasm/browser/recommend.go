//go:build js && wasm

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"syscall/js"

	"github.com/dynosim/dynosim-web/core/config"
	"github.com/dynosim/dynosim-web/core/recommend"
	"github.com/dynosim/dynosim-web/core/report"
	"github.com/dynosim/dynosim-web/core/sim"
)

// recommendParse(yaml, name) → {base, size, target, dims: [{path, values}]}
// or {error}: the search space of a recommend config, so the page can send
// trials (the Base config plus a candidate's sets) to other workers.
func recommendParse(this js.Value, args []js.Value) (result any) {
	defer func() {
		if r := recover(); r != nil {
			result = errResult(panicMessage(r))
		}
	}()
	if len(args) < 1 {
		return errResult("dynosimRecommendParse: missing config")
	}
	name := stringOr(argOr(args, 1), "recommend.yaml")
	text, err := bytesOf(args[0], name, maxConfig)
	if err != nil {
		return errResult(err.Error())
	}
	sp, err := recommend.Parse(name, text, nil)
	if err != nil {
		return errResult(err.Error())
	}
	dims := make([]any, len(sp.Dims))
	for i, d := range sp.Dims {
		vals := make([]any, len(d.Values))
		for j, v := range d.Values {
			vals[j] = v
		}
		dims[i] = map[string]any{"path": d.Path, "values": vals}
	}
	res := map[string]any{"base": string(sp.Base), "size": sp.Size(), "target": sp.Spec.Optimization.Target,
		"maxTrials": sp.Spec.Optimizer.MaxTrials, "dims": dims, "mode": "aggregated", "itlMs": 0}
	if cfg, err := config.Parse(name, sp.Base, nil); err == nil {
		res["mode"], res["itlMs"] = cfg.Engine.Mode, cfg.Evaluation.SLA.ITLMs
	}
	return js.ValueOf(res)
}

// recommendRun(req, evaluate, onEntry) → Promise of {json, csv, base,
// yamls: [{id, yaml}], deploy: [{id, dir, launch, dgd, error}]} (deploy.go),
// rejected with the one-line error. req: {config,
// configName, trace, traceName, parallel}. It runs recommend.Search in a
// goroutine (a js.FuncOf callback must not block): each trial calls
// evaluate(setsArray), which returns a Promise of {json} (the report) or
// {error, reason} (the error text and its recommend reason category), and
// onEntry(entryJSON) sees each ledger entry as it is placed.
func recommendRun(this js.Value, args []js.Value) any {
	promise := js.Global().Get("Promise")
	if len(args) < 2 || args[1].Type() != js.TypeFunction {
		return promise.Call("reject", js.Global().Get("Error").New("dynosimRecommend: want (request, evaluate, onEntry)"))
	}
	req, evaluate := args[0], args[1]
	onEntry := argOr(args, 2)
	in := sim.Inputs{ConfigName: stringOr(req.Get("configName"), "recommend.yaml"), TraceName: stringOr(req.Get("traceName"), "trace.jsonl")}
	text, err := bytesOf(req.Get("config"), in.ConfigName, maxConfig)
	if err == nil {
		in.Trace, err = bytesOf(req.Get("trace"), in.TraceName, maxTrace)
	}
	parallel := 1
	if p := req.Get("parallel"); p.Type() == js.TypeNumber {
		parallel = max(1, p.Int())
	}
	var handler js.Func
	handler = js.FuncOf(func(_ js.Value, pargs []js.Value) any {
		resolve, reject := pargs[0], pargs[1]
		go func() {
			defer handler.Release()
			res, err := runSearch(text, in, err, parallel, evaluate, onEntry)
			if err != nil {
				reject.Invoke(js.Global().Get("Error").New(oneLine(err.Error())))
				return
			}
			resolve.Invoke(res)
		}()
		return nil
	})
	return promise.New(handler)
}

func runSearch(text []byte, in sim.Inputs, inErr error, parallel int, evaluate, onEntry js.Value) (_ js.Value, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = errors.New(panicMessage(r))
		}
	}()
	if inErr != nil {
		return js.Undefined(), inErr
	}
	sp, err := recommend.Parse(in.ConfigName, text, nil)
	if err != nil {
		return js.Undefined(), err
	}
	in.Config = sp.Base
	p, err := sim.PrepareSweep(in)
	if err != nil {
		return js.Undefined(), err
	}
	ev := &jsEvaluator{fn: evaluate}
	var entry func(recommend.Entry)
	if onEntry.Type() == js.TypeFunction {
		entry = func(e recommend.Entry) {
			if b, err := json.Marshal(e); err == nil {
				onEntry.Invoke(string(b))
			}
		}
	}
	l, err := recommend.Search(sp, p, ev, parallel, entry)
	if err != nil {
		return js.Undefined(), err
	}
	js1, err := l.JSON()
	if err != nil {
		return js.Undefined(), err
	}
	var yamls []any
	for i, e := range l.Recommended() {
		y, err := sp.RecommendationYAML(l, i, e, nil)
		if err != nil {
			return js.Undefined(), err
		}
		yamls = append(yamls, map[string]any{"id": e.ID, "yaml": string(y)})
	}
	ds, err := recommendDeploys(sp, l)
	if err != nil {
		return js.Undefined(), err
	}
	deploys := make([]any, len(ds))
	for i, d := range ds {
		deploys[i] = d.js()
	}
	return js.ValueOf(map[string]any{"json": string(js1), "csv": string(l.CSV()), "base": string(sp.Base), "yamls": yamls, "deploy": deploys}), nil
}

// jsEvaluator runs each trial through the page's evaluate callback (another
// Web Worker's dynosimPredict) and waits for its promise.
type jsEvaluator struct {
	fn js.Value
	mu sync.Mutex // JS calls come from the search's goroutines
}

type answer struct {
	rep    *report.Report
	reason string
	err    error
}

// Predict implements recommend.Evaluator.
func (j *jsEvaluator) Predict(sets []string) (*report.Report, string, error) {
	ch := make(chan answer, 1)
	var ok, fail js.Func
	ok = js.FuncOf(func(_ js.Value, args []js.Value) any {
		v := argOr(args, 0)
		var a answer
		switch {
		case v.Type() != js.TypeObject:
			a = answer{reason: recommend.ReasonRuntime, err: errors.New("the trial worker sent no answer")}
		case v.Get("error").Type() == js.TypeString:
			a = answer{reason: stringOr(v.Get("reason"), recommend.ReasonRuntime), err: errors.New(v.Get("error").String())}
		default:
			var rep report.Report
			if err := json.Unmarshal([]byte(v.Get("json").String()), &rep); err != nil {
				a = answer{reason: recommend.ReasonRuntime, err: fmt.Errorf("the trial's report: %w", err)}
			} else {
				a = answer{rep: &rep}
			}
		}
		ch <- a
		return nil
	})
	fail = js.FuncOf(func(_ js.Value, args []js.Value) any {
		msg := "the trial failed"
		if e := argOr(args, 0); e.Type() == js.TypeObject && e.Get("message").Type() == js.TypeString {
			msg = e.Get("message").String()
		} else if e.Type() == js.TypeString {
			msg = e.String()
		}
		ch <- answer{reason: recommend.ReasonRuntime, err: errors.New(msg)}
		return nil
	})
	arr := make([]any, len(sets))
	for i, s := range sets {
		arr[i] = s
	}
	j.mu.Lock()
	j.fn.Invoke(js.ValueOf(arr)).Call("then", ok, fail)
	j.mu.Unlock()
	a := <-ch
	ok.Release()
	fail.Release()
	return a.rep, a.reason, a.err
}

// trials caches the last sweep a trial worker prepared (its Base config
// and trace), so the trials of one search parse the trace once per worker.
var trials struct {
	key string
	p   *sim.Prepared
}

// predictTrial runs one candidate of a search: req.sets over the prepared
// base (req.sweepKey names it; the config and trace are read only when the
// key changes). Errors carry the recommend reason category and the raw
// error text, as recommend.Local reports them.
func predictTrial(req js.Value, in sim.Inputs, cb func(sim.Progress) bool) (any, error) {
	key := stringOr(req.Get("sweepKey"), "")
	if key == "" || key != trials.key || trials.p == nil {
		var err error
		if in.Config, err = bytesOf(req.Get("config"), in.ConfigName, maxConfig); err != nil {
			return nil, err
		}
		if in.Trace, err = bytesOf(req.Get("trace"), in.TraceName, maxTrace); err != nil {
			return nil, err
		}
		trials.key, trials.p = "", nil
		p, err := sim.PrepareSweep(in)
		if need := needTable(err); need != nil {
			return need, nil
		}
		if err != nil {
			return js.ValueOf(map[string]any{"error": err.Error(), "reason": recommend.Category(err)}), nil
		}
		trials.key, trials.p = key, p
	}
	s := req.Get("sets")
	sets := make([]string, s.Length())
	for i := range sets {
		sets[i] = s.Index(i).String()
	}
	rep, err := trials.p.Run(sets, cb)
	if need := needTable(err); need != nil {
		// timing.kernels: aic: sim-worker.js fetches the table and sends
		// this trial again (the prepared sweep stays).
		return need, nil
	}
	if err != nil {
		return js.ValueOf(map[string]any{"error": err.Error(), "reason": recommend.Category(err)}), nil
	}
	out, err := rep.JSON()
	if err != nil {
		return nil, err
	}
	return js.ValueOf(map[string]any{"json": string(out)}), nil
}

// candidateYAML(base, sets) → {yaml} or {error}: a candidate's complete
// predict config (recommend.Space.YAML of the search's Base config).
func candidateYAML(this js.Value, args []js.Value) (result any) {
	defer func() {
		if r := recover(); r != nil {
			result = errResult(panicMessage(r))
		}
	}()
	if len(args) < 2 {
		return errResult("dynosimCandidateYAML: want (base, sets)")
	}
	sets := make([]string, args[1].Length())
	for i := range sets {
		sets[i] = args[1].Index(i).String()
	}
	y, err := (&recommend.Space{Base: []byte(args[0].String())}).YAML(sets)
	if err != nil {
		return errResult(err.Error())
	}
	return js.ValueOf(map[string]any{"yaml": string(y)})
}
