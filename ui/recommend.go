package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/vugu/vugu"
	"github.com/vugu/vugu/js"
)

// RecPreset is a named recommend config (`dynosim recommend -c`) for the
// Recommend view's editor.
type RecPreset struct{ Name, Label, YAML string }

// recBase is the page's default config on 200 requests of the sample.
var recBase = strings.Replace(strings.SplitN(defaultYAML, "\n", 3)[2], "  load: {type: trace_timestamps, speedup: 1.0}\n",
	"  load: {type: trace_timestamps, speedup: 1.0}\n  stop: {requests: 200}\n", 1)

// RecPresets are offered in the Recommend view. The first is the default.
var RecPresets = []RecPreset{
	{"replicas-router", "Replicas × router on the conversation sample, goodput per GPU",
		"# dynosim recommend: every value may be a domain ({choices: [...]} or {range: {...}}).\n" +
			strings.NewReplacer("replicas: 8,", "replicas: {choices: [1, 2, 4]},",
				"router: {policy: round_robin}", "router: {policy: {choices: [round_robin, kv_router]}}").Replace(recBase) +
			"optimization: {target: goodput_per_gpu, constraints: {max_candidate_gpus: 2}}\noptimizer: {max_trials: 12}\n"},
	{"agg-disagg", "Aggregated vs disaggregated split (Pareto)",
		"# dynosim recommend: the engine's mode and worker split are searched together.\n" + aggDisagg(recBase) +
			"optimization: {target: pareto}\noptimizer: {max_trials: 12}\n"},
	{"max-rate", "Max rate meeting the SLA (replicas)",
		"# dynosim recommend: the highest trace speedup each candidate serves within the SLA.\n" +
			strings.NewReplacer("replicas: 8,", "replicas: {choices: [4, 8]},",
				"evaluation: {sla: {ttft_ms: 500, itl_ms: 50}}", "evaluation: {sla: {ttft_ms: 20000, itl_ms: 100}}").Replace(recBase) +
			"optimization: {target: max_rate, max_rate: {start: 0.25, tolerance: 0.2, max_runs: 6}}\noptimizer: {max_trials: 4}\n"},
}

// aggDisagg makes engine.mode and engine.workers one searched value: the
// aggregated pool, or prefill and decode pools.
func aggDisagg(y string) string {
	head, rest, ok := strings.Cut(y, "  workers:\n")
	_, tail, ok2 := strings.Cut(rest, "\nrouter:")
	if !ok || !ok2 {
		return ""
	}
	head = strings.Replace(head, "  mode: aggregated\n", "", 1)
	eng, after, _ := strings.Cut(head, "engine:\n")
	return eng + "engine:\n  choices:\n" +
		"    - {mode: aggregated" + flowOf(after) + ", workers: {aggregated: {parallelism: {replicas: 4}}}}\n" +
		"    - {mode: aggregated" + flowOf(after) + ", workers: {aggregated: {parallelism: {replicas: 2}}}}\n" +
		"    - {mode: disaggregated" + flowOf(after) + ", kv_transfer: {handoff: bootstrap, bandwidth_gb_per_second: 50}, workers: {prefill: {parallelism: {replicas: 2}, scheduler: {max_sequences: 8}}, decode: {parallelism: {replicas: 2}}}}\n" +
		"    - {mode: disaggregated" + flowOf(after) + ", kv_transfer: {handoff: bootstrap, bandwidth_gb_per_second: 50}, workers: {prefill: {parallelism: {replicas: 1}, scheduler: {max_sequences: 8}}, decode: {parallelism: {replicas: 3}}}}\n" +
		"router: {policy: {choices: [round_robin, kv_router]}}" + strings.TrimPrefix(tail, " {policy: round_robin}")
}

// flowOf turns "  key: value\n" lines into ", key: value".
func flowOf(lines string) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimRight(lines, "\n"), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			b.WriteString(", " + l)
		}
	}
	return b.String()
}

func recPresetYAML(name string) string {
	for _, p := range RecPresets {
		if p.Name == name {
			return p.YAML
		}
	}
	return ""
}

// OnRecPreset loads a recommend preset into the Recommend editor.
func (c *Root) OnRecPreset(event vugu.DOMEvent) {
	if y := recPresetYAML(event.PropString("target", "value")); y != "" {
		c.RecConfig, c.RecPreset = y, event.PropString("target", "value")
	}
}

// OnRecInput keeps the Recommend editor's text.
func (c *Root) OnRecInput(event vugu.DOMEvent) {
	c.RecConfig = event.PropString("target", "value")
	c.recEditorText, c.RecPreset = c.RecConfig, ""
}

// RunRecommend starts a search on the worker pool (dynosimRecommendView.run).
func (c *Root) RunRecommend() {
	if c.RecRunning {
		return
	}
	c.RecRunning, c.RecError, c.RecDone, c.RecBest = true, "", false, nil
	c.RecStatus = "Searching…"
	c.recRun++
	run, started := c.recRun, time.Now()
	opts := js.Global().Get("Object").New()
	opts.Set("config", c.RecConfig)
	opts.Set("configName", "recommend.yaml")
	if c.UseService && c.ServiceURL != "" {
		opts.Set("service", c.ServiceURL) // trials go to the shared service's /v1/predict
	}
	c.withTrace(func(trace js.Value, name string) {
		if run != c.recRun {
			return
		}
		setJS(opts, "trace", trace)
		opts.Set("traceName", name)
		c.then(js.Global().Get("dynosimRecommendView").Call("run", opts), func(res js.Value) {
			if run != c.recRun {
				return
			}
			l := res.Get("ledger").Get("counts")
			c.RecRunning, c.RecDone = false, true
			c.RecStatus = fmt.Sprintf("Done: %d evaluated, %d feasible, %d infeasible, %d failed on %d workers — %.1f s",
				l.Get("evaluated").Int(), l.Get("feasible").Int(), l.Get("infeasible").Int(), l.Get("failed").Int(),
				res.Get("workers").Int(), time.Since(started).Seconds())
			card, err := newDeployCard(res.Get("json").String(), deployFiles(res.Get("deploy")))
			if err != nil {
				c.RecError = err.Error()
			}
			c.RecBest = card
		}, func(msg string) {
			if run != c.recRun {
				return
			}
			c.RecRunning = false
			if msg == "canceled" {
				c.RecStatus = "Canceled."
				return
			}
			c.RecError, c.RecStatus = msg, "Failed."
		})
	}, func(msg string) { c.RecRunning, c.RecError, c.RecStatus = false, msg, "Failed." })
}

// deployFiles reads dynosim.recommend's deploy list.
func deployFiles(v js.Value) []DeployFile {
	if v.Type() != js.TypeObject {
		return nil
	}
	out := make([]DeployFile, v.Length())
	for i := range out {
		d := v.Index(i)
		out[i] = DeployFile{ID: jsString(d.Get("id")), Dir: jsString(d.Get("dir")), Launch: jsString(d.Get("launch")),
			DGD: jsString(d.Get("dgd")), Error: jsString(d.Get("error"))}
	}
	return out
}

// DeployDownload downloads the Deploy card's launch.sh or dgd.yaml.
func (c *Root) DeployDownload(kind string) {
	switch b := c.RecBest; {
	case b == nil:
	case kind == "launch" && b.Launch != "":
		dynosim().Call("download", "launch.sh", b.Launch, "text/x-shellscript")
	case kind == "dgd" && b.DGD != "":
		dynosim().Call("download", "dgd.yaml", b.DGD, "application/yaml")
	}
}

// SearchDeployments is the predict view's "Search deployments for this
// workload": the editor's config as a default-space recommend config
// (deploymentSearchYAML) in the Recommend editor, searched on the same
// trace at once.
func (c *Root) SearchDeployments() {
	if el := js.Global().Get("document").Call("getElementById", "recommend"); el.Truthy() {
		el.Call("scrollIntoView", map[string]any{"block": "start"})
	}
	y, budget, err := deploymentSearchYAML(c.Config)
	if err != nil {
		c.RecError, c.RecStatus = err.Error(), "Failed."
		return
	}
	c.CancelRecommend()
	c.RecConfig, c.RecPreset = y, ""
	c.RunRecommend()
	c.RecStatus = fmt.Sprintf("Searching deployments for this workload within %d GPUs…", budget)
}

// CancelRecommend stops the search (its workers are terminated).
func (c *Root) CancelRecommend() {
	if !c.RecRunning {
		return
	}
	c.recRun++
	c.RecRunning, c.RecStatus = false, "Canceled."
	dynosim().Call("cancelRecommend")
}

// RecExport downloads the search's JSON, CSV or recommended YAMLs.
func (c *Root) RecExport(kind string) {
	js.Global().Get("dynosimRecommendView").Call("exportAs", kind)
}

// openCandidate (window.dynosimOpenCandidate) puts a candidate's predict
// config in the editor and runs it.
func (c *Root) openCandidate(args []js.Value) {
	if len(args) < 1 || args[0].Type() != js.TypeString {
		return
	}
	c.Config, c.Preset = args[0].String(), ""
	if len(args) > 1 {
		c.Notice = "Opened " + args[1].String() + " of the recommendation."
	}
	c.scheduleValidate(0)
	if !c.Running {
		c.Run()
	}
	if el := js.Global().Get("document").Call("getElementById", "config-editor"); el.Truthy() {
		el.Call("scrollIntoView", map[string]any{"block": "center"})
	}
}

// withTrace resolves the trace Run would use and calls start with it (an
// undefined trace: the config's own workload).
func (c *Root) withTrace(start func(trace js.Value, name string), fail func(string)) {
	switch {
	case c.TraceFile.Truthy():
		start(c.TraceFile, c.TraceName)
	case c.Sample != "":
		name := c.Sample
		if name == defaultSample {
			name = "conversation"
		}
		file := dynosim().Get("samples").Get(name).Get("file").String()
		sample := c.Sample
		c.then(dynosim().Call("sample", name), func(blob js.Value) {
			if sample == defaultSample {
				// the CLI's embedded sample: the trace's first 1,000 requests
				blob = blob.Call("slice", 0, defaultSampleBytes)
			}
			start(blob, file)
		}, fail)
	default:
		start(js.Undefined(), "")
	}
}

// PoolSize is how many trial workers a search uses.
func (c *Root) PoolSize() int {
	if d := dynosim(); d.Truthy() && d.Get("poolSize").Type() == js.TypeFunction {
		return d.Call("poolSize").Int()
	}
	return 2
}
