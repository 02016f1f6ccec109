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

	HasReport  bool
	Rows       []SummaryRow
	Latency    []LatencyRow // the AIPerf-style distribution table
	Balance    []BalanceRow // requests routed per worker
	Overlap    string       // the router's estimated overlap beside the reuse obtained
	HasPrev    bool
	Table      string // AIPerf-style text table
	tableGen   int    // bumped with Table; syncDOM puts it in #console-table
	reportJSON string
	summary    map[string]float64
	prevSum    map[string]float64
	Requests   *RequestTable

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
	c.Sample = "conversation"
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
					c.finish(res)
				}
			}, func(msg string) {
				if run != c.RunCount {
					return
				}
				c.stop()
				if msg == "canceled" {
					c.Status = "Canceled."
					return
				}
				c.Error, c.Status = msg, "Failed."
			})
			return
		}
		progress := c.funcOf(func(args []js.Value) {
			if run != c.RunCount || !c.Running {
				return
			}
			p := arg0(args)
			done, total := p.Get("done").Int(), p.Get("total").Int()
			if total > 0 {
				c.Percent = min(99, done*100/total)
			}
			c.Status = fmt.Sprintf("%d / %d requests, simulated %.1f s", done, total, p.Get("simTimeMs").Float()/1000)
		})
		c.then(dynosim().Call("runRaw", opts, progress), func(res js.Value) {
			progress.Release()
			if run != c.RunCount {
				return
			}
			c.finish(res)
		}, func(msg string) {
			progress.Release()
			if run != c.RunCount {
				return
			}
			c.stop()
			if msg == "canceled" {
				c.Status = "Canceled."
				return
			}
			c.Error, c.Status = msg, "Failed."
		})
	}
	switch {
	case c.TraceFile.Truthy():
		start(c.TraceFile, c.TraceName)
	case c.Sample != "":
		file := js.Global().Get("dynosim").Get("samples").Get(c.Sample).Get("file").String()
		c.then(dynosim().Call("sample", c.Sample), func(blob js.Value) {
			start(blob, file)
		}, func(msg string) {
			c.stop()
			c.Error = msg
		})
	default:
		start(js.Undefined(), "")
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
	t := time.NewTicker(100 * time.Millisecond)
	c.ticker = t
	go func() {
		for range t.C {
			c.env.Lock()
			if run != c.RunCount || !c.Running {
				c.env.UnlockRender()
				return
			}
			c.Elapsed = fmt.Sprintf("%.1f s", time.Since(c.started).Seconds())
			c.env.UnlockRender()
		}
	}()
}

func (c *Root) finish(res js.Value) {
	c.stop()
	c.Percent = 100
	json := res.Get("json").String()
	sum, workers, err := parseReport([]byte(json))
	if err != nil {
		c.Error = "report: " + err.Error()
		return
	}
	if c.summary != nil {
		c.prevSum = c.summary
	}
	c.summary, c.reportJSON = sum, json
	c.HasReport, c.HasPrev = true, c.prevSum != nil
	c.Rows = summaryRows(sum, c.prevSum)
	c.Latency = latencyRows(sum)
	c.Balance, c.Overlap = routerRows(workers, sum)
	c.Table = jsString(res.Get("table"))
	c.tableGen++
	c.RunURL = runLink(jsString(res.Get("runURL")), c.ServiceURL)
	c.Requests = nil
	if r := res.Get("requests"); r.Type() == js.TypeString {
		if t, err := parseRequests([]byte(r.String())); err == nil {
			c.Requests = t
		}
	}
	c.Status = fmt.Sprintf("Done in %s.", c.Elapsed)
	if c.RunURL != "" {
		c.Status = fmt.Sprintf("Done on the shared service in %s.", c.Elapsed)
	}
	if charts := js.Global().Get("dynosimCharts"); charts.Truthy() {
		charts.Call("render", res.Get("report"))
	}
}

// DownloadReport saves the report JSON.
func (c *Root) DownloadReport() {
	if c.reportJSON != "" {
		dynosim().Call("download", "prediction.json", c.reportJSON, "application/json")
	}
}

// DownloadCSV saves the per-request records as CSV.
func (c *Root) DownloadCSV() {
	if c.Requests != nil {
		dynosim().Call("download", "requests.csv", c.Requests.CSV(), "text/csv")
	}
}

// Share puts the config and sample choice in the URL fragment and copies
// the link. Uploaded traces are never included.
func (c *Root) Share() {
	frag := shareFragment(c.Config, c.Sample)
	if len(frag) > maxShareFragment {
		c.Error = fmt.Sprintf("this config is too large for a share link (%s in the link; the limit is %s): share the file instead", humanBytes(float64(len(frag))), humanBytes(maxShareFragment))
		return
	}
	loc := js.Global().Get("location")
	js.Global().Get("history").Call("replaceState", js.Null(), "", frag)
	link := loc.Get("href").String()
	c.Notice = "Link copied: the URL now holds this config" + map[bool]string{true: " and sample", false: " (uploaded traces are not shared)"}[c.Sample != ""] + "."
	if cb := js.Global().Get("navigator").Get("clipboard"); cb.Truthy() {
		p := cb.Call("writeText", link)
		p.Call("catch", js.FuncOf(func(js.Value, []js.Value) any { return nil }))
	}
}

// SortBy sorts the per-request table by column i.
func (c *Root) SortBy(i int) {
	if c.Requests != nil {
		c.Requests.Sort(i)
	}
}

// PageBy moves the per-request table by delta pages.
func (c *Root) PageBy(delta int) {
	if c.Requests != nil {
		c.Requests.SetPage(c.Requests.Page + delta)
	}
}

// SortMark is the arrow shown on the sorted column.
func (c *Root) SortMark(i int) string {
	if c.Requests == nil || c.Requests.SortCol != i {
		return ""
	}
	if c.Requests.SortAsc {
		return " ▲"
	}
	return " ▼"
}

// AriaSort is the aria-sort value of column i.
func (c *Root) AriaSort(i int) string {
	if c.Requests == nil || c.Requests.SortCol != i {
		return "none"
	}
	if c.Requests.SortAsc {
		return "ascending"
	}
	return "descending"
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
