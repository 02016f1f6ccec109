// Package sim is the one entry point every front end (CLI, browser, Worker)
// calls: it loads a config, its workload and optional profile from bytes, runs
// the replay and returns the report. It does no I/O of its own: files named
// in the config are read through Inputs.ReadFile, which the front end owns.
package sim

import (
	"fmt"
	"path"
	"runtime"
	"slices"
	"strings"

	"github.com/dynosim/dynosim-web/core/config"
	"github.com/dynosim/dynosim-web/core/engine"
	"github.com/dynosim/dynosim-web/core/handoff"
	"github.com/dynosim/dynosim-web/core/replay"
	"github.com/dynosim/dynosim-web/core/report"
	"github.com/dynosim/dynosim-web/core/router"
	"github.com/dynosim/dynosim-web/core/workload"
	"github.com/dynosim/dynosim-web/timing"
	"github.com/dynosim/dynosim-web/timing/kernels"
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

	// ModelConfig is an uploaded HF config.json standing for engine.model
	// (the page and the Worker have no file system).
	ModelConfig     []byte
	ModelConfigName string

	// ReadFile reads a file named in the config (trace paths, profile path).
	// Nil means the front end has no file system: such a config is an error.
	ReadFile func(path string) ([]byte, error)

	CapturePerRequest bool // keep per-request records in the report
	// Watch is a request (its uuid) whose life the report's
	// request_timeline records, pass by pass (0: none). Runs are
	// deterministic, so a front end captures one on demand by running the
	// same inputs again; the other sections do not change.
	Watch  uint64
	Limits Limits // zero means unlimited

	// KernelTable returns the measured kernel table of a GPU
	// (timing.KernelTableGPU) under an engine for `timing.kernels: aic`, or
	// nil when there is none; the table is read-only and may be shared by
	// runs. Nil means this front end has no tables: such a config is an
	// error (the CLI embeds them: timing/kernels/kerneldata).
	KernelTable func(gpu, engine string) (*kernels.Table, error)
}

// Limits protect shared services from runs that are too large.
type Limits struct {
	MaxRequests int // requests in the workload
	MaxPasses   int // engine passes in the replay
	// Prompt and output tokens of the run's requests: the work of a run
	// grows with them, not with its passes (a pass costs O(batch)).
	MaxPromptTokens, MaxOutputTokens int
	// MaxStateBytes bounds the simulator state a run may build, as
	// estimated before anything is built (checkMemory), below MemoryBudget:
	// a Workers isolate has 128 MB, not the page's 4 GiB.
	MaxStateBytes int64
}

// Progress is reported periodically during a run.
type Progress struct {
	SimTimeMs float64 // virtual clock
	Done      int     // requests finished (completed or rejected)
	Total     int     // requests in the workload (0 if unknown)
}

// ErrCanceled is returned when the progress callback asks to stop.
var ErrCanceled = replay.ErrCanceled

// ErrTooLarge wraps errors caused by Inputs.Limits.
var ErrTooLarge = replay.ErrTooLarge

// Predict runs one prediction. progress may be nil; when it returns false the
// run stops with ErrCanceled.
func Predict(in Inputs, progress func(Progress) bool) (*report.Report, error) {
	p, err := Prepare(in)
	if err != nil {
		return nil, err
	}
	return p.Run(nil, progress)
}

// maxErrorLen bounds an error message: an input that echoes a huge value
// (a 10 MB string where a name belongs) is cut, on every front end alike
// and for every run of a prepared input (Prepare and Run clip).
const maxErrorLen = 1000

// clipped is an error whose message was cut; errors.Is still sees the cause.
type clipped struct {
	msg string
	err error
}

func (e *clipped) Error() string { return e.msg }
func (e *clipped) Unwrap() error { return e.err }

func clip(err error) error {
	if err == nil || len(err.Error()) <= maxErrorLen {
		return err
	}
	msg := strings.ToValidUTF8(err.Error()[:maxErrorLen], "")
	return &clipped{msg: msg + fmt.Sprintf("… (%d more bytes)", len(err.Error())-len(msg)), err: err}
}

// Prepared is a parsed config with its workload loaded: read-only, so one
// value serves many runs (a recommend trial each) from many goroutines.
type Prepared struct {
	in   Inputs
	name string
	cfg  config.Config
	wl   *workload.Workload
	key  string // the traffic source wl was loaded for
	// sweep: the inputs' config is completed by each run's overrides
	// (PrepareSweep), so every run parses its own.
	sweep bool
	// live: a live deployment (NewLive), whose workers all publish KV
	// events for outside routers.
	live bool
}

// PrepareSweep prepares a search: the inputs' config need not be valid by
// itself (each trial's overrides complete it: a domain's first value may be
// infeasible), so only its traffic and execution sections are parsed and
// the workload loaded now. Run parses each trial's whole config.
func PrepareSweep(in Inputs) (_ *Prepared, err error) {
	defer func() { err = clip(err) }()
	p := &Prepared{in: in, name: in.ConfigName, sweep: true}
	if p.name == "" {
		p.name = "config"
	}
	text, err := config.Sections(p.in.Config, "traffic", "execution")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.name, err)
	}
	var sets []string
	for _, s := range in.Sets {
		if strings.HasPrefix(s, "traffic.") || strings.HasPrefix(s, "execution.") {
			sets = append(sets, s)
		}
	}
	if p.cfg, err = config.Parse(p.name, text, sets); err != nil {
		return nil, err
	}
	if p.in.Trace != nil {
		p.cfg.Traffic.Source.Type = "trace"
	}
	if p.wl, err = loadWorkload(&p.cfg, in); err != nil {
		return nil, err
	}
	p.key = sourceKey(&p.cfg)
	return p, nil
}

// Prepare parses and loads in once.
func Prepare(in Inputs) (_ *Prepared, err error) {
	defer func() { err = clip(err) }()
	p := &Prepared{in: in, name: in.ConfigName}
	if p.name == "" {
		p.name = "config"
	}
	if p.cfg, err = p.parse(nil); err != nil {
		return nil, err
	}
	if p.wl, err = loadWorkload(&p.cfg, in); err != nil {
		return nil, err
	}
	p.key = sourceKey(&p.cfg)
	// Resolve the engines once so their errors (an unknown GPU, a bad
	// profile) surface here, not in every run.
	for _, r := range roles(&p.cfg) {
		ec, roof, err := engineConfig(&p.cfg, r, in, p.wl)
		if err != nil {
			return nil, err
		}
		if err := ec.Validate(); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", p.name, r.path, err)
		}
		if _, _, err := deployment(&p.cfg, r, in, roof, &ec); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func (p *Prepared) parse(overrides []string) (config.Config, error) {
	sets := p.in.Sets
	if len(overrides) > 0 {
		sets = append(slices.Clip(sets), overrides...)
	}
	cfg, err := config.Parse(p.name, p.in.Config, sets)
	if err != nil {
		return cfg, err
	}
	if p.in.Trace != nil {
		cfg.Traffic.Source.Type = "trace"
		if cfg.Traffic.Load.Type == "poisson" || cfg.Traffic.Load.Type == "constant_rate" {
			cfg.Traffic.Load.Type = ""
		}
	}
	return cfg, nil
}

// Config is the config a Run with overrides would use (for a search to
// judge a candidate before running it).
func (p *Prepared) Config(overrides []string) (config.Config, error) {
	return p.parse(overrides)
}

// sourceKey identifies the workload a config loads.
func sourceKey(cfg *config.Config) string {
	n := 0
	if cfg.Traffic.Source.Type == "synthetic" {
		n = cfg.Traffic.Stop.Requests
	}
	return fmt.Sprintf("%#v %d", cfg.Traffic.Source, n)
}

// Run runs one prediction with overrides (PATH=VALUE, applied after the
// inputs' own) on fresh engines. It is safe to call from many goroutines.
func (p *Prepared) Run(overrides []string, progress func(Progress) bool) (_ *report.Report, err error) {
	defer func() { err = clip(err) }()
	cfg, wl := p.cfg, p.wl
	if len(overrides) > 0 || p.sweep {
		var err error
		if cfg, err = p.parse(overrides); err != nil {
			return nil, err
		}
		if sourceKey(&cfg) != p.key {
			if wl, err = loadWorkload(&cfg, p.in); err != nil {
				return nil, err
			}
		}
	}
	if cfg.Traffic.Source.Type == "synthetic" && cfg.Traffic.Stop.Requests == 0 {
		cfg.Traffic.Stop.Requests = wl.Requests()
	}
	total := wl.Requests()
	if cfg.Traffic.Stop.Requests > 0 {
		total = min(total, cfg.Traffic.Stop.Requests)
	}
	if p.in.Limits.MaxRequests > 0 && total > p.in.Limits.MaxRequests {
		return nil, fmt.Errorf("%w: %d requests, this service runs at most %d (use the CLI or the page for large runs)", ErrTooLarge, total, p.in.Limits.MaxRequests)
	}
	c, err := p.cluster(&cfg, wl)
	if err != nil {
		return nil, err
	}
	opt := replay.Options{
		Load:        loadOf(&cfg),
		MaxRequests: cfg.Traffic.Stop.Requests,
		MaxTime:     timing.FromMs(cfg.Traffic.Stop.MaxVirtualTimeSeconds * 1000),
		MaxPasses:   p.in.Limits.MaxPasses,
		Seed:        cfg.Traffic.Load.Seed,
		Capture:     p.in.CapturePerRequest,
		Watch:       p.in.Watch,
		SLA:         report.SLA(cfg.Evaluation.SLA),
		Warmup:      report.Warmup{Requests: cfg.Traffic.Warmup.Requests, Until: timing.FromMs(cfg.Traffic.Warmup.Seconds * 1000)},
		Transfer:    c.xfer,
		Frontend:    c.frontend,
		Scaling:     c.scaling,
		Tiers:       len(c.tiers) > 0,
		// The first pool is where requests land; disaggregated handoffs
		// keep their own timing.
		AsyncScheduling: cfg.Engine.Mode != "disaggregated" && roles(&cfg)[0].Scheduler.AsyncScheduling,
	}
	opt.MaxPromptTokens, opt.MaxOutputTokens = p.in.Limits.MaxPromptTokens, p.in.Limits.MaxOutputTokens
	opt.Progress = func(ms float64, done, total int) bool {
		// Yield now and then on wasm. There is one thread and no
		// preemption there, so a GC cycle that starts during the replay
		// cannot finish until the replay yields: its write barriers stay on
		// and the rest of the run is a third slower (whole conversation
		// trace under node: 6.1 s against 4.4 s). Native builds mark on
		// other threads and lose 10% to the yields.
		if runtime.GOARCH == "wasm" {
			runtime.Gosched()
		}
		return progress == nil || progress(Progress{SimTimeMs: ms, Done: done, Total: total})
	}
	rep, err := replay.Run(wl, c.pools, opt)
	if err != nil {
		return nil, err
	}
	rep.Deployment, rep.Warnings = &c.dep, c.warnings
	rep.KVTiers = tierReports(c.tiers, rep)
	return rep, nil
}

// cluster is what a run replays: fresh pools of workers with their
// routers, the handoff of a disaggregated run, and what the report says of
// the deployment.
type cluster struct {
	pools    []replay.Pool
	xfer     *replay.Transfer
	dep      report.Deployment
	warnings []string
	frontend timing.Time // the serving frontend's latency (the roofline's engine overhead)
	scaling  *replay.Scaling
	ecfgs    []engine.Config // per pool, what its workers are built from
	layouts  []layout        // per pool, its workers' ranks and lanes
	tiers    []poolTiers     // pools with KVBM lower tiers
}

// cluster builds the cluster of cfg: every pool's engine config first,
// then, once the run's estimated memory is known to fit (checkMemory),
// its workers and routers.
func (p *Prepared) cluster(cfg *config.Config, wl *workload.Workload) (*cluster, error) {
	c := &cluster{dep: report.Deployment{Mode: cfg.Engine.Mode, Backend: cfg.Engine.Backend, Model: cfg.Engine.Model}}
	rs := roles(cfg)
	var mem []memTerm
	for _, r := range rs {
		ecfg, err := p.poolConfig(cfg, r, wl, c)
		if err != nil {
			return nil, err
		}
		c.ecfgs = append(c.ecfgs, ecfg)
		mem = append(mem, poolMemory(cfg, r, &ecfg, wl)...)
	}
	if err := checkMemory(p.name, mem, p.in.Limits.MaxStateBytes); err != nil {
		return nil, err
	}
	first := 0
	for k, r := range rs {
		ecfg := c.ecfgs[k]
		workers := make([]*engine.Worker, r.Parallelism.Replicas)
		for i := range workers {
			var err error
			if workers[i], err = newWorker(cfg, ecfg, c.layouts[k], first+i); err != nil {
				return nil, fmt.Errorf("%s: %s: %w", p.name, r.path, err)
			}
		}
		first += len(workers)
		policy, err := newRouter(cfg, &ecfg, r.name == "decode")
		if err != nil {
			return nil, fmt.Errorf("%s: router: %w", p.name, err)
		}
		c.pools = append(c.pools, replay.Pool{Name: r.name, Workers: workers, Router: policy, GPUs: r.GPUs()})
	}
	c.warnings = append(c.warnings, priorityWarnings(cfg, wl)...)
	if cfg.Planner.Policy == "enabled" {
		var err error
		if c.scaling, err = scaling(cfg, c); err != nil {
			return nil, fmt.Errorf("%s: %w", p.name, err)
		}
	}
	return c, nil
}

// poolConfig is what role r's workers are built from; it records in c
// what the report says of the pool, the frontend latency, the handoff and
// the lower tiers.
func (p *Prepared) poolConfig(cfg *config.Config, r role, wl *workload.Workload, c *cluster) (engine.Config, error) {
	ecfg, roof, err := engineConfig(cfg, r, p.in, wl)
	if err != nil {
		return ecfg, err
	}
	d, warn, err := deployment(cfg, r, p.in, roof, &ecfg)
	if err != nil {
		return ecfg, err
	}
	c.dep.Pools = append(c.dep.Pools, d)
	c.layouts = append(c.layouts, layoutOf(cfg, r, roof.Model))
	if pp := r.Parallelism.Pipeline; pp > 1 {
		// The report's blocks are the worker's; each virtual engine
		// holds its share (vLLM V0's Scheduler: num_gpu_blocks //=
		// pipeline_parallel_size).
		if ecfg.NumBlocks /= pp; ecfg.NumBlocks < 1 {
			return ecfg, fmt.Errorf("%s.kv_cache.capacity: %d blocks split over parallelism.pipeline %d virtual engines leave none for each", r.path, d.KVBlocks, pp)
		}
	}
	if len(c.dep.Pools) == 1 && ecfg.Model == timing.Model(roof) {
		// Requests pass the frontend once, before the first pool's
		// router; only the roofline prices it (the other timing
		// sources give pass times and nothing else).
		c.frontend = timing.FromMs(roof.Overhead().FrontendMs)
	}
	if warn != "" {
		c.warnings = append(c.warnings, warn)
	}
	// The KV router reads the KV events the workers publish; nothing
	// else does, so only it pays for them. Decode routing is
	// overlap-blind (spec §7.6): decode workers publish none.
	rt := &cfg.Router
	ecfg.Events = p.live || rt.Policy == "kv_router" && rt.KV.UseKVEvents && r.name != "decode"
	// Only the live hub keeps events past the pass that published them;
	// the replay's router applies them at the pass end (issue 34 item 2).
	ecfg.TransientEvents = !p.live
	switch r.name {
	case "prefill":
		if c.xfer, err = transfer(cfg, roof); err != nil {
			return ecfg, err
		}
		link := c.xfer.Link
		link.Hold = !c.xfer.Direct
		ecfg.Prefill = &link
	case "decode":
		ecfg.Decode = true
	}
	ecfg.Watch = p.in.Watch
	if ecfg.Tiers, err = lowerTiers(cfg, r, roof, ecfg.BlockSize); err != nil {
		return ecfg, err
	} else if ecfg.Tiers != nil {
		c.tiers = append(c.tiers, poolTiers{r.name, ecfg.Tiers})
	}
	return ecfg, nil
}

// transfer is the handoff of a disaggregated run (spec §7): bytes per
// token from the model unless given, vLLM source-first and SGLang
// destination-first on the bootstrap path.
func transfer(cfg *config.Config, roof *timing.Roofline) (*replay.Transfer, error) {
	kt := &cfg.Engine.KVTransfer
	bpt, err := kt.BytesPerTokenValue()
	if err != nil {
		return nil, err
	}
	if bpt == 0 {
		// The whole KV of a token, every TP shard: what the transfer moves.
		bpt = float64(timing.KVBytesPerToken(roof.Model, 1))
	}
	x := &replay.Transfer{Direct: kt.Handoff == "direct", FullPrompt: kt.TimingMode == "full_prompt", Link: engine.Handoff{KVBytesPerToken: bpt}}
	if kt.BandwidthGBps != nil {
		x.Link.BandwidthGBps = *kt.BandwidthGBps
	}
	if cfg.Engine.Backend == "sglang" {
		x.Order = handoff.DestinationFirst
	}
	return x, nil
}

// newRouter builds the router of a pool: the configured policy, except
// that a decode pool's KV router ignores overlap, reads no KV events and
// never queues (spec §7.6).
func newRouter(cfg *config.Config, ecfg *engine.Config, decode bool) (router.Policy, error) {
	rt := &cfg.Router
	switch rt.Policy {
	case "random":
		seed := cfg.Execution.Seed
		if decode {
			seed ^= 0x6465636f6465 // "decode": its own stream
		}
		return router.NewRandom(seed), nil
	case "kv_router":
		cost := router.DefaultCostConfig()
		cost.OverlapScoreCredit, cost.PrefillLoadScale, cost.Temperature = rt.OverlapScoreCredit, rt.PrefillLoadScale, rt.Temperature
		cost.OverlapScoreCreditDecay, cost.DecodeActiveRequestWeight = rt.KV.OverlapScoreCreditDecay, rt.KV.DecodeActiveRequestWeight
		cost.HostCacheHitWeight, cost.DiskCacheHitWeight = rt.HostCacheHitWeight, rt.DiskCacheHitWeight // lower-tier credit (issue 31 item 2)
		kc := router.KVConfig{
			Cost: cost, BlockSize: ecfg.BlockSize, Seed: cfg.Execution.Seed,
			UseEvents: rt.KV.UseKVEvents, TTL: timing.FromMs(rt.KV.TTLSeconds * 1000),
			Threshold: rt.KV.Queue.Threshold, MaxBatchedTokens: ecfg.MaxBatchedTokens, QueuePolicy: rt.KV.Queue.Policy,
		}
		if decode {
			kc.Cost.OverlapScoreCredit, kc.Cost.HostCacheHitWeight, kc.Cost.DiskCacheHitWeight, kc.UseEvents, kc.Threshold = 0, 0, 0, false, 0
			kc.Seed ^= 0x6465636f6465
		} else if rt.PrefillLoadModel.Type == "aic" {
			// The run's own timing model prices the prefill the router
			// expects (AIConfigurator's role in Dynamo).
			model, scale := ecfg.Model, ecfg.Scale
			kc.PrefillMs = func(isl, cached int) float64 { return scale.Prefill(model, 1, isl, cached).Ms() }
		}
		return router.NewKV(kc)
	}
	return router.NewRoundRobin(), nil
}

func loadWorkload(cfg *config.Config, in Inputs) (*workload.Workload, error) {
	src := &cfg.Traffic.Source
	if src.Type == "synthetic" {
		n := cfg.Traffic.Stop.Requests
		if n == 0 {
			n = 100
		}
		return workload.SyntheticLengths(n, src.InputTokens.Length(), src.OutputTokens.Length(), cfg.Traffic.Load.Seed)
	}
	type file struct {
		name string
		data []byte
	}
	var files []file
	if in.Trace != nil {
		n := in.TraceName
		if n == "" {
			n = "trace"
		}
		files = append(files, file{n, in.Trace})
	} else {
		if len(src.Paths) == 0 {
			return nil, fmt.Errorf("traffic.source.paths: a trace source needs a path (or an uploaded trace)")
		}
		for i, p := range src.Paths {
			if in.ReadFile == nil {
				return nil, fmt.Errorf("traffic.source.paths[%d]: %s: no file access here; upload the trace instead", i, p)
			}
			data, err := in.ReadFile(p)
			if err != nil {
				return nil, fmt.Errorf("traffic.source.paths[%d]: %w", i, err)
			}
			files = append(files, file{path.Base(p), data})
		}
	}
	var wl *workload.Workload
	for _, f := range files {
		format := src.Format
		switch strings.ToLower(path.Ext(f.name)) {
		case ".csv":
			format = "azure"
		case ".jsonl", ".json":
			format = "mooncake"
		}
		var w *workload.Workload
		var err error
		if format == "azure" {
			w, err = workload.ReadAzure(f.name, f.data)
		} else {
			w, err = workload.ReadMooncake(f.name, f.data, src.BlockSize)
		}
		if err != nil {
			return nil, err
		}
		if wl == nil {
			wl = w
		} else if err := wl.Merge(w); err != nil {
			return nil, err
		}
	}
	return wl, nil
}

func loadOf(cfg *config.Config) replay.Load {
	ld := loadKind(cfg)
	ld.Speedup = cfg.Traffic.Load.Speedup
	return ld
}

func loadKind(cfg *config.Config) replay.Load {
	l := cfg.Traffic.Load
	switch l.Type {
	case "concurrency":
		return replay.Load{Kind: replay.Concurrency, Concurrency: l.Concurrency, RampUp: timing.FromMs(1000 * l.RampUpSeconds)}
	case "poisson":
		return replay.Load{Kind: replay.Poisson, RatePerSec: l.RequestsPerSecond}
	case "constant_rate":
		rate := l.RequestsPerSecond
		if l.IntervalMs > 0 {
			rate = 1000 / l.IntervalMs
		}
		return replay.Load{Kind: replay.ConstantRate, RatePerSec: rate}
	case "trace_timestamps":
		return replay.Load{Kind: replay.TraceTimestamps}
	}
	if cfg.Traffic.Source.Type == "trace" {
		return replay.Load{Kind: replay.TraceTimestamps}
	}
	return replay.Load{Kind: replay.Concurrency, Concurrency: l.Concurrency, RampUp: timing.FromMs(1000 * l.RampUpSeconds)}
}

// role is one worker role of a run's mode.
type role struct {
	name, path string // aggregated | prefill | decode; engine.workers.<name>
	*config.Role
}

// roles are the worker roles of cfg's mode, in pool order.
func roles(cfg *config.Config) []role {
	w := &cfg.Engine.Workers
	if cfg.Engine.Mode == "disaggregated" {
		return []role{{"prefill", "engine.workers.prefill", &w.Prefill}, {"decode", "engine.workers.decode", &w.Decode}}
	}
	return []role{{"aggregated", "engine.workers.aggregated", &w.Aggregated}}
}

func engineConfig(cfg *config.Config, r role, in Inputs, wl *workload.Workload) (engine.Config, *timing.Roofline, error) {
	ec := cfg.EngineConfig(r.Role)
	roof, err := timingAndCapacity(cfg, r.path, r.Role, in, wl, &ec)
	return ec, roof, err
}
