package main

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/vugu/vugu"
	"github.com/vugu/vugu/js"
)

// Root is the page's single Vugu component. It holds the UI state; the
// simulator runs in a Web Worker behind window.dynosim (public/dynosim.js)
// and the charts are drawn by public/charts.js with uPlot.
type Root struct {
	env vugu.EventEnv // set by vuguSetup; lock it in async callbacks

	Embed bool

	// ServiceURL is the shared service (the Cloudflare Worker) the page may
	// send runs to: "" (the default) hides the option. UseService is the
	// user's tick; RunURL the shareable GET /v1/runs/{id} link of the last
	// service run.
	ServiceURL string
	UseService bool
	RunURL     string

	Config      string
	editorText  string // what syncDOM last put in the editor
	ConfigError string // live validation result
	Preset      string

	Sample      string   // "conversation", "synthetic" or "" when a file is used
	TraceFile   js.Value // the dropped/selected trace File, if any
	TraceName   string
	ProfileFile js.Value
	ProfileName string

	Running  bool
	Percent  int
	Status   string
	started  time.Time
	Elapsed  string
	Error    string
	Notice   string
	RunCount int

	HasReport bool
	// Runs is the compare list (oldest first; the last is the current run,
	// whose results are shown); BaselineID picks the run it is compared
	// with (0: the one before it).
	Runs       []*RunEntry
	BaselineID int
	runSeq     int
	failed     bool // the last run failed: the shown results are stale

	// derived from the current run and its baseline by show()
	KPIs        []KPI
	AIPerfTitle string
	AIPerfCols  []string
	AIPerf      []AIPerfRow
	AIPerfLines []AIPerfRow
	Groups      []SummaryGroup
	Speed       []SummaryRow // this machine's speed, never compared
	Base        *RunEntry    // the baseline run, nil without one
	Badge       []BadgePool
	Model       string
	Mode        string
	Memory      []MemoryLine
	Warnings    []string
	Balance     []BalanceRow // requests routed per worker
	Overlap     string       // the router's estimated overlap beside the reuse obtained
	Table       string       // AIPerf-style text table
	tableGen    int          // bumped with Table; syncDOM puts it in #console-table
	Requests    *RequestTable
	Planner     *PlannerView // the planner panel (nil: the run had no planner)
	plannerRun  *RunEntry    // the run the planner plots show
	Tiers       *TiersView   // the KV tiers section (nil: no pool has lower tiers)
	Verdict     *VerdictView // the answer above the tables (nil: no run)
	DetailsOpen bool         // the raw tables' Details block is open
	latencyRun  *RunEntry    // the run the latency-over-time plot shows
	tiersRun    *RunEntry    // the run the KV tier plots show

	// the Recommend view (ui/recommend.go; its ledger and plots are drawn by
	// public/recommend.js)
	RecConfig     string
	recEditorText string
	RecPreset     string
	RecRunning    bool
	RecDone       bool
	RecStatus     string
	RecError      string
	RecBest       *DeployCard // the search's Deploy card (ui/deploycard.go; nil: none yet)
	recRun        int

	// the TTFT breakdown, a request's life, a real run beside the
	// prediction (ui/explain_ui.go, ui/real.go)
	explainState

	validateMu  sync.Mutex
	validateGen int
	ticker      *time.Ticker
	funcs       []js.Func
}

// Init sets the starting state from the URL (share link, embed mode).
func (c *Root) Init(ctx vugu.InitCtx) {
	c.env = ctx.EventEnv()
	c.Config = defaultYAML
	c.Preset = Presets[0].Name
	c.Sample = defaultSample
	c.OpenRun = -1
	if d := dynosim(); d.Truthy() {
		c.ServiceURL = jsString(d.Get("serviceURL"))
	}
	loc := js.Global().Get("location")
	if loc.Truthy() {
		c.Embed = strings.Contains(loc.Get("search").String(), "embed=1")
		if cfg, sample := parseFragment(loc.Get("hash").String()); cfg != "" || sample != "" {
			if cfg != "" {
				c.Config, c.Preset = cfg, ""
			}
			if sample != "" {
				c.Sample = sample
			}
		}
	}
	c.RecConfig, c.RecPreset = RecPresets[0].YAML, RecPresets[0].Name
	if loc.Truthy() {
		c.loadSharedRun(loc.Get("search").String()) // a share link: ?run=<id>
	}
	js.Global().Get("Reflect").Call("set", js.Global(), "dynosimOpenCandidate", c.funcOf(c.openCandidate))
	c.scheduleValidate(0)
}

// markReady tells tests and embedders the UI has rendered (called by main
// after the first render: Vugu calls Rendered only on child components).
func (c *Root) markReady() {
	if b := js.Global().Get("document").Get("body"); b.Truthy() {
		b.Get("dataset").Set("ready", "1")
	}
	if f := js.Global().Get("dynosimUIReady"); f.Type() == js.TypeFunction {
		f.Invoke()
	}
}

// funcOf wraps a callback that runs under the render lock and re-renders.
func (c *Root) funcOf(fn func(args []js.Value)) js.Func {
	f := js.FuncOf(func(this js.Value, args []js.Value) any {
		c.env.Lock()
		defer c.env.UnlockRender()
		fn(args)
		return nil
	})
	c.funcs = append(c.funcs, f)
	return f
}

// then attaches callbacks to a JS promise; they run under the render lock.
func (c *Root) then(p js.Value, ok func(js.Value), fail func(string)) {
	var okf, failf js.Func
	release := func() { okf.Release(); failf.Release() }
	okf = js.FuncOf(func(this js.Value, args []js.Value) any {
		c.env.Lock()
		defer c.env.UnlockRender()
		defer release()
		ok(arg0(args))
		return nil
	})
	failf = js.FuncOf(func(this js.Value, args []js.Value) any {
		c.env.Lock()
		defer c.env.UnlockRender()
		defer release()
		msg := "unknown error"
		if e := arg0(args); e.Truthy() {
			if m := e.Get("message"); m.Type() == js.TypeString {
				msg = m.String()
			} else {
				msg = e.Call("toString").String()
			}
		}
		fail(msg)
		return nil
	})
	p.Call("then", okf, failf)
}

func arg0(args []js.Value) js.Value {
	if len(args) == 0 {
		return js.Undefined()
	}
	return args[0]
}

func dynosim() js.Value { return js.Global().Get("dynosim") }

// jsString is v's text if v is a string, else "".
func jsString(v js.Value) string {
	if v.Type() != js.TypeString {
		return ""
	}
	return v.String()
}

// OnUseService records the "Run on the shared service" tick.
func (c *Root) OnUseService(event vugu.DOMEvent) {
	c.UseService = c.ServiceURL != "" && event.JSEventTarget().Get("checked").Truthy()
}

// ServiceHost names the shared service for the page's text.
func (c *Root) ServiceHost() string { return serviceHost(c.ServiceURL) }

// remote reports whether Run sends the run to the shared service.
func (c *Root) remote() bool { return c.UseService && c.ServiceURL != "" }

// setJS sets obj[key] = v for a js.Value v (vugu's Value.Set only takes Go
// values; Call converts its arguments).
func setJS(obj js.Value, key string, v js.Value) {
	js.Global().Get("Reflect").Call("set", obj, key, v)
}

// OnConfigInput keeps the editor text and validates it after a pause.
func (c *Root) OnConfigInput(event vugu.DOMEvent) {
	c.Config = event.PropString("target", "value")
	c.editorText = c.Config // the editor already shows it
	c.Preset = ""
	c.scheduleValidate(300 * time.Millisecond)
}

// scheduleValidate checks the config in the validator worker (the same
// parser and messages as the CLI) once typing pauses.
func (c *Root) scheduleValidate(delay time.Duration) {
	c.validateMu.Lock()
	c.validateGen++
	gen := c.validateGen
	c.validateMu.Unlock()
	text := c.Config
	time.AfterFunc(delay, func() {
		c.validateMu.Lock()
		stale := gen != c.validateGen
		c.validateMu.Unlock()
		if stale || !dynosim().Truthy() {
			return
		}
		c.then(dynosim().Call("validate", text), func(v js.Value) {
			c.validateMu.Lock()
			stale := gen != c.validateGen
			c.validateMu.Unlock()
			if stale {
				return
			}
			if v.Type() == js.TypeString {
				c.ConfigError = v.String()
			} else {
				c.ConfigError = ""
			}
		}, func(msg string) {})
	})
}

// OnPreset replaces the editor text with a preset.
func (c *Root) OnPreset(event vugu.DOMEvent) {
	name := event.PropString("target", "value")
	if y := presetYAML(name); y != "" {
		c.Config, c.Preset = y, name
		c.scheduleValidate(0)
	}
}

// OnSample picks an embedded sample trace (dropping any selected file).
func (c *Root) OnSample(event vugu.DOMEvent) {
	c.Sample = event.PropString("target", "value")
	if c.Sample != "" {
		c.TraceFile, c.TraceName = js.Undefined(), ""
		c.Notice = ""
	}
}

// OnTraceFile takes the trace from the trace-input file input (the drop
// zone routes dropped files there too).
func (c *Root) OnTraceFile(event vugu.DOMEvent) {
	f := firstFile(event)
	if !f.Truthy() {
		return
	}
	c.TraceFile, c.TraceName, c.Sample = f, f.Get("name").String(), ""
	c.Error, c.Notice = "", fmt.Sprintf("Loaded %s (%s).", c.TraceName, humanBytes(f.Get("size").Float()))
}

// OnProfileFile takes a .npz profile from profile-input.
func (c *Root) OnProfileFile(event vugu.DOMEvent) {
	f := firstFile(event)
	if !f.Truthy() {
		return
	}
	c.ProfileFile, c.ProfileName = f, f.Get("name").String()
	c.Error = ""
}

// ClearProfile drops the selected profile.
func (c *Root) ClearProfile() {
	c.ProfileFile, c.ProfileName = js.Undefined(), ""
}

// OnConfigFile loads a dropped/selected .yaml into the editor.
func (c *Root) OnConfigFile(event vugu.DOMEvent) {
	f := firstFile(event)
	if !f.Truthy() {
		return
	}
	name := f.Get("name").String()
	if size := f.Get("size").Float(); size > maxConfigBytes {
		c.Error = fmt.Sprintf("%s: the config is %s; configs over 16 MiB are refused", name, humanBytes(size))
		return
	}
	c.Error = ""
	c.then(f.Call("text"), func(v js.Value) {
		c.Config, c.Preset = v.String(), ""
		c.Notice = "Config: " + name
		c.scheduleValidate(0)
	}, func(msg string) { c.Error = name + ": " + msg })
}

func firstFile(event vugu.DOMEvent) js.Value {
	files := event.JSEventTarget().Get("files")
	if !files.Truthy() || files.Length() == 0 {
		return js.Undefined()
	}
	return files.Index(0)
}

// Run starts a replay in the worker.
func (c *Root) Run() {
	if c.Running {
		return
	}
	c.Error, c.Running, c.Percent, c.Status = "", true, 0, "Loading trace…"
	remote := c.remote()
	c.started = time.Now()
	c.Elapsed = "0.0 s"
	c.RunCount++
	run := c.RunCount
	c.startTicker(run)
	key, config, label := c.inputKey(), c.Config, c.TraceLabel()

	opts := js.Global().Get("Object").New()
	opts.Set("config", c.Config)
	opts.Set("capturePerRequest", !remote) // the service sends no per-request records
	if c.ProfileFile.Truthy() {
		setJS(opts, "profile", c.ProfileFile)
		opts.Set("profileName", c.ProfileName)
	}
	start := func(trace js.Value, name string) {
		if run != c.RunCount || !c.Running {
			return
		}
		setJS(opts, "trace", trace)
		opts.Set("traceName", name)
		c.Status = "Running…"
		if remote {
			c.Status = "Running on the shared service (" + c.ServiceHost() + ")…"
			c.then(dynosim().Call("runRemote", opts), func(res js.Value) {
				if run == c.RunCount {
					c.finish(res, key, config, label, opts)
				}
			}, c.runFailed(run))
			return
		}
		progress := js.FuncOf(func(this js.Value, args []js.Value) any {
			c.env.Lock()
			defer c.env.UnlockOnly()
			if run != c.RunCount || !c.Running {
				return nil
			}
			// the ticker paints the replay's progress: one frame per tick,
			// not one per message as well (issue 32 item 8)
			p := arg0(args)
			c.Percent, c.Status = progressStatus(p)
			if p.Get("phase").String() == "report" {
				c.paintProgress()
			}
			return nil
		})
		c.then(dynosim().Call("runRaw", lazyRequests(opts), progress), func(res js.Value) {
			progress.Release()
			if run != c.RunCount {
				return
			}
			c.finish(res, key, config, label, opts)
		}, func(msg string) {
			progress.Release()
			c.runFailed(run)(msg)
		})
	}
	c.withTrace(start, func(msg string) {
		c.stop()
		c.Error, c.Status, c.failed = msg, "Failed.", true
	})
}

// runFailed handles the rejection of run number run: canceled or failed,
// unless a newer run has replaced it.
func (c *Root) runFailed(run int) func(msg string) {
	return func(msg string) {
		if run != c.RunCount {
			return
		}
		c.stop()
		if msg == "canceled" {
			c.Status = "Canceled."
			return
		}
		c.Error, c.Status, c.failed = msg, "Failed.", true
	}
}

// Cancel stops the running replay (the worker is terminated and replaced).
func (c *Root) Cancel() {
	if !c.Running {
		return
	}
	c.stop()
	c.Status = "Canceled."
	c.RunCount++ // late callbacks of the canceled run are ignored
	dynosim().Call("cancel")
}

func (c *Root) stop() {
	c.Running = false
	if c.ticker != nil {
		c.ticker.Stop()
		c.ticker = nil
	}
	c.Elapsed = fmt.Sprintf("%.1f s", time.Since(c.started).Seconds())
}

func (c *Root) startTicker(run int) {
	// Each paint of the bar, status and elapsed time costs the page a
	// style, layout and paint pass on the thread the simulation's worker
	// shares the machine with: four a second are enough.
	t := time.NewTicker(250 * time.Millisecond)
	c.ticker = t
	go func() {
		for range t.C {
			c.env.Lock()
			if run != c.RunCount || !c.Running {
				c.env.UnlockRender()
				return
			}
			c.Elapsed = fmt.Sprintf("%.1f s", time.Since(c.started).Seconds())
			c.paintProgress()
			c.env.UnlockOnly()
		}
	}()
}

// paintProgress writes the run's progress (bar, status, elapsed time) into
// the page directly, for the ticker and the progress callback: a Vugu render
// re-emits the whole page, ten times a second while results are shown. The
// next render writes the same values from c.
func (c *Root) paintProgress() {
	doc := js.Global().Get("document")
	if el := doc.Call("querySelector", `[data-testid="progress"]`); el.Truthy() {
		el.Call("setAttribute", "aria-valuenow", fmt.Sprint(c.Percent))
		if bar := el.Call("querySelector", ".bar"); bar.Truthy() {
			bar.Call("setAttribute", "style", "width:"+fmt.Sprint(c.Percent)+"%")
		}
	}
	if el := doc.Call("querySelector", ".status > span:first-child"); el.Truthy() {
		el.Set("textContent", c.Status)
	}
	if el := doc.Call("querySelector", `[data-testid="elapsed"]`); el.Truthy() {
		el.Set("textContent", c.Elapsed)
	}
}

// finish keeps a finished run; opts are its inputs (a request's life is a
// replay of them).
func (c *Root) finish(res js.Value, key, config, trace string, opts js.Value) {
	c.stop()
	c.Percent = 100
	json := res.Get("json").String()
	parsed, err := parseReport([]byte(json))
	if err != nil {
		c.Error, c.failed = "report: "+err.Error(), true
		return
	}
	c.runSeq++
	r := &RunEntry{ID: c.runSeq, Config: config, Trace: trace, key: key, JSON: json, report: res.Get("report"),
		Parsed: parsed, Table: jsString(res.Get("table")), RunURL: runLink(jsString(res.Get("runURL")), c.ServiceURL),
		PageURL: pageLinkOf(res), opts: opts}
	c.deferRequests(r, res)
	cur := runInputs{config, trace, timingProfile(parsed)}
	if n := len(c.Runs); n == 0 {
		r.Name = runName(runInputs{}, cur, r.ID, true)
	} else {
		prev := c.Runs[n-1]
		r.Name = runName(runInputs{prev.Config, prev.Trace, timingProfile(prev.Parsed)}, cur, r.ID, false)
	}
	c.Runs = append(c.Runs, r)
	if len(c.Runs) > maxRuns {
		c.Runs = c.Runs[len(c.Runs)-maxRuns:]
	}
	c.BaselineID, c.failed = 0, false
	c.show()
	c.Status = fmt.Sprintf("Done: %s —", ranWhat(parsed))
	if r.RunURL != "" {
		c.Status = fmt.Sprintf("Done on the shared service: %s —", ranWhat(parsed))
	}
}

// ShownError is the run error, or else the live config error.
func (c *Root) ShownError() string {
	if c.Error != "" {
		return clip(c.Error, maxShownError)
	}
	return clip(c.ConfigError, maxShownError)
}

// ConfigStatus is the line under the editor.
func (c *Root) ConfigStatus() string {
	if c.ConfigError != "" {
		return clip(c.ConfigError, maxShownError)
	}
	return "Config is valid."
}

// syncDOM puts large texts into the page with direct DOM calls after each
// render: the editor's text when Go changed it (preset, file, share link)
// and the console table. Vugu sends its render instructions through a
// 16 KiB buffer and panics on a longer string ("requested instruction does
// not fit in the buffer"), so these are not bound in the template.
func (c *Root) syncDOM() {
	doc := js.Global().Get("document")
	if c.Config != c.editorText {
		if el := doc.Call("getElementById", "config-editor"); el.Truthy() {
			el.Set("value", c.Config)
			c.editorText = c.Config
		}
	}
	// (compared with the element's value: Vugu may have replaced the
	// element when a section above it appeared)
	if el := doc.Call("getElementById", "rec-editor"); el.Truthy() && (c.RecConfig != c.recEditorText || el.Get("value").String() != c.RecConfig) {
		el.Set("value", c.RecConfig)
		c.recEditorText = c.RecConfig
	}
	if v := js.Global().Get("dynosimRecommendView"); v.Truthy() {
		v.Call("remount")
	}
	c.syncRunNames(doc)
	if ch := js.Global().Get("dynosimCharts"); ch.Truthy() && ch.Get("remount").Type() == js.TypeFunction {
		ch.Call("remount")
	}
	c.syncExplain(doc)
	if p := js.Global().Get("dynosimPlanner"); p.Truthy() {
		p.Call("remount")
	}
	if p := js.Global().Get("dynosimTiers"); p.Truthy() {
		p.Call("remount")
	}
	if p := js.Global().Get("dynosimLatency"); p.Truthy() {
		p.Call("remount")
	}
	if el := doc.Call("getElementById", "console-table"); el.Truthy() {
		// (also when a render emptied it: the template gives it no children)
		g := el.Get("dynosimGen")
		if g.Type() != js.TypeNumber || g.Int() != c.tableGen || (c.Table != "" && !el.Call("hasChildNodes").Bool()) {
			el.Set("textContent", c.Table)
			el.Set("dynosimGen", c.tableGen)
		}
	}
}

// TraceLabel describes the trace that Run will use.
func (c *Root) TraceLabel() string {
	switch {
	case c.TraceFile.Truthy():
		return c.TraceName
	case c.Sample == defaultSample:
		return "sample: conversation, first 1,000 requests"
	case c.Sample != "":
		return "sample: " + c.Sample
	}
	return "none (the config's own workload)"
}

func humanBytes(n float64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", n/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", n/(1<<10))
	}
	return fmt.Sprintf("%.0f B", n)
}
