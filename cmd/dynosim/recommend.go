package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"text/tabwriter"

	"github.com/dynosim/dynosim-web/core/config"
	"github.com/dynosim/dynosim-web/core/deploy"
	"github.com/dynosim/dynosim-web/core/recommend"
	"github.com/dynosim/dynosim-web/core/report/schema"
	"github.com/dynosim/dynosim-web/core/sim"
	"github.com/dynosim/dynosim-web/timing/kernels/kerneldata"
	"gopkg.in/yaml.v3"
)

// noFeasible is a search that found nothing feasible: exit status 1, as
// AISimulate's recommend (its outputs are written first).
type noFeasible struct{ error }

// runRecommend implements `dynosim recommend -c rec.yaml [--set …]
// [--trace FILE] [--output-dir DIR] [--parallel N] [--remote URL[,URL…]
// (repeatable) [--remote-timeout D]] [--format table|json]`. --trace is predict's:
// the file replaces traffic.source.paths, read under the same bound and
// with the same errors. A --remote service that cannot be reached or
// does not answer ends the search with that error (exit 2, as bad input),
// not a ledger of failed candidates.
func runRecommend(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("recommend", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		cfgPath  = fs.String("c", "", "recommend config `FILE` (YAML: a predict config with domains, optimization, optimizer)")
		trace    = fs.String("trace", "", "trace `FILE` (.jsonl Mooncake, .csv Azure); overrides traffic.source.paths")
		outDir   = fs.String("output-dir", "", "write recommendation.json, recommendation.csv, recommendations/NNNN.yaml and deploy/NNNN/{launch.sh,dgd.yaml} to `DIR`")
		parallel = fs.Int("parallel", runtime.NumCPU(), "trials at once (`N`; default the cores, with --remote at least 2 per URL); the ledger is the same whatever N")
		timeout  = fs.Duration("remote-timeout", defaultRemoteTimeout, "with --remote: give up a trial (every attempt included) after `DURATION`, ending the search")
		format   = fs.String("format", "table", "output `format`: table or json")
		quiet    = fs.Bool("quiet", false, "no progress lines on stderr")
		sets     multiFlag
		remote   multiFlag
	)
	fs.Var(&sets, "set", "override `PATH=VALUE` (VALUE may be a domain; repeatable)")
	fs.Var(&remote, "remote", "run the trials on the DynoSim Workers at `URL` (their /v1/predict) instead of locally; repeatable or comma-separated: trials spread over the URLs, a failed post is retried on another")
	fs.StringVar(cfgPath, "config", "", "same as -c")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	switch {
	case fs.NArg() > 0:
		return usageError{fmt.Errorf("recommend: unexpected argument %q", fs.Arg(0))}
	case *cfgPath == "":
		return usageError{errors.New("recommend: -c FILE is required (a predict config with search domains)")}
	case *format != "table" && *format != "json":
		return usageError{fmt.Errorf("--format: must be table or json, got %q", *format)}
	case *parallel < 1:
		return usageError{fmt.Errorf("--parallel: must be ≥ 1, got %d", *parallel)}
	case *timeout <= 0:
		return usageError{fmt.Errorf("--remote-timeout: must be > 0, got %v", *timeout)}
	case len(remote) == 0 && flagSet(fs, "remote-timeout"):
		return usageError{errors.New("--remote-timeout: bounds --remote trials; without --remote it does nothing")}
	}
	sp, p, dir, in, err := prepareRecommend(*cfgPath, *trace, sets)
	if err != nil {
		return err
	}
	var ev recommend.Evaluator = recommend.Local{P: p}
	if len(remote) > 0 {
		if !flagSet(fs, "parallel") {
			// A Worker runs one trial at a time (wasm/worker/handler.go
			// holds a lock around the core); a second in flight per URL
			// hides the upload and the answer behind the other's run.
			urls, err := parseRemote(remote)
			if err != nil {
				return err
			}
			*parallel = max(*parallel, 2*len(urls))
		}
		r, err := newRemote(remote, in.ConfigName, sp.Base, in, *parallel, *timeout)
		if err != nil {
			return err
		}
		ev = r
	}
	l, err := recommend.Search(sp, p, ev, *parallel, trialProgress(stderr, *quiet))
	if err != nil {
		return err
	}
	paths := map[string]string{} // candidate → its YAML, for the json rows
	if *outDir != "" {
		if paths, err = writeRecommendation(*outDir, dir, *trace, sp, l, stderr); err != nil {
			return err
		}
	}
	if *format == "json" {
		if l.Pick != nil {
			for _, w := range l.Pick.Warnings {
				fmt.Fprintf(stderr, "dynosim: warning: %s\n", w)
			}
		}
		if err := printRecommendedJSON(stdout, l, paths); err != nil {
			return err
		}
	} else {
		printDeploy(stdout, l)
		printLedger(stdout, l)
	}
	if l.Counts.Feasible == 0 {
		return noFeasible{fmt.Errorf("recommend: no feasible candidate among %d evaluated (see the reasons in the ledger)", l.Counts.Evaluated)}
	}
	return nil
}

// flagSet reports whether the flag name was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// prepareRecommend parses the recommend config at cfgPath with its --set
// overrides and prepares the sweep once; the config's relative paths are
// read from its directory dir. trace (may be ""), read as predict's
// --trace, replaces traffic.source.paths.
func prepareRecommend(cfgPath, trace string, sets []string) (*recommend.Space, *sim.Prepared, string, sim.Inputs, error) {
	data, err := readFile(cfgPath)
	if err != nil {
		return nil, nil, "", sim.Inputs{}, err
	}
	name, dir := filepath.Base(cfgPath), filepath.Dir(cfgPath)
	sp, err := recommend.Parse(name, data, sets)
	if err != nil {
		return nil, nil, "", sim.Inputs{}, err
	}
	in := sim.Inputs{Config: sp.Base, ConfigName: name, ReadFile: func(p string) ([]byte, error) {
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		return readFile(p)
	}, KernelTable: kerneldata.Load} // timing.kernels: aic
	if trace != "" {
		if in.Trace, err = readFile(trace); err != nil {
			return nil, nil, "", sim.Inputs{}, err
		}
		in.TraceName = filepath.Base(trace)
	}
	p, err := sim.PrepareSweep(in)
	if err != nil {
		return nil, nil, "", sim.Inputs{}, err
	}
	return sp, p, dir, in, nil
}

// trialProgress prints a line per finished trial on stderr (none if quiet).
func trialProgress(stderr io.Writer, quiet bool) func(recommend.Entry) {
	return func(e recommend.Entry) {
		if quiet {
			return
		}
		what := e.Status
		if e.Score != nil {
			what = fmt.Sprintf("score %.6g", *e.Score)
		} else if e.ReasonCategory != "" {
			what += " (" + e.ReasonCategory + ")"
		}
		fmt.Fprintf(stderr, "dynosim: trial %d: %s %s\n", e.Trial, strings.Join(e.Sets, " "), what)
	}
}

// printRecommendedJSON prints the recommended candidates, best first, as
// JSON rows (--format json); paths are their written YAML files.
func printRecommendedJSON(stdout io.Writer, l *recommend.Ledger, paths map[string]string) error {
	type row struct {
		Rank       int       `json:"rank"`
		ID         string    `json:"candidate_id"`
		Score      *float64  `json:"score"`
		Objectives []float64 `json:"objectives,omitempty"`
		UsedGPUs   int       `json:"used_gpus"`
		ConfigPath string    `json:"config_path,omitempty"`
	}
	rows := []row{}
	for i, e := range l.Recommended() {
		rows = append(rows, row{i + 1, e.ID, e.Score, e.Objectives, e.UsedGPUs, paths[e.ID]})
	}
	b, _ := json.MarshalIndent(rows, "", "  ")
	_, err := stdout.Write(append(b, '\n'))
	return err
}

// printDeploy prints the recommendation first (issue 32): "Deploy:" and
// the best candidate's deployment in words with its headline figures,
// whether it meets the SLA (or the note saying why it is only the closest),
// then a warning per searched range whose edge it sits at.
func printDeploy(w io.Writer, l *recommend.Ledger) {
	p := l.Pick
	if p == nil {
		fmt.Fprintln(w, "Deploy: nothing (no candidate completed a request)")
		return
	}
	h := p.Headline
	sla := "meets the SLA"
	if !p.MeetsSLA {
		sla = "does NOT meet the SLA"
	}
	if f := p.SLAMetFraction; f != nil {
		sla += fmt.Sprintf(" (%.1f%% of requests within every target)", 100**f)
	}
	fmt.Fprintf(w, "Deploy: %s — p99 TTFT %.4g ms, p99 ITL %.4g ms, %.0f tok/s (%.1f tok/s/GPU) on %.0f GPUs; %s [%s]\n",
		p.Label, h[recommend.HeadP99TTFTMs], h[recommend.HeadP99ITLMs], h[recommend.HeadTokS], h[recommend.HeadTokSPerGPU], h[recommend.HeadGPUs], sla, p.ID)
	if p.Note != "" {
		fmt.Fprintf(w, "note: %s\n", p.Note)
	}
	for _, m := range p.Warnings {
		fmt.Fprintf(w, "warning: %s\n", m)
	}
}

// printLedger prints the counts and the view as a table: each row names
// its deployment by pool; a candidate equal to a better-ranked one shown
// (same score, GPUs and metrics) collapses into that row's "equal" count.
func printLedger(w io.Writer, l *recommend.Ledger) {
	c := l.Counts
	fmt.Fprintf(w, "Target %s, %s search of %d candidates: %d evaluated, %d feasible, %d infeasible, %d failed, %d cache hits\n",
		l.Target, l.Provenance.Strategy, l.Provenance.SpaceSize, c.Evaluated, c.Feasible, c.Infeasible, c.Failed, c.CacheHits)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "rank\tcandidate\tscore\tGPUs\ttok/s\ttok/s/GPU\ttok/s/user\tTTFT p99 ms\tSLA\tdeployment\tconfig\tequal")
	rec := l.Recommended()
	shown := map[string]bool{}
	for _, e := range rec {
		shown[e.ID] = true
	}
	for i, e := range rec {
		if e.SameAs != "" && shown[e.SameAs] {
			continue
		}
		score := "-"
		if e.Score != nil {
			score = fmt.Sprintf("%.6g", *e.Score)
		}
		var cfg []string
		for _, d := range l.Provenance.Dims {
			cfg = append(cfg, d.Path[strings.LastIndex(d.Path, ".")+1:]+"="+e.Config[d.Path])
		}
		sla := "no"
		if e.MeetsSLA {
			sla = "yes"
		}
		equal := "-"
		if n := len(e.Equal); n > 0 {
			ids := e.Equal[:min(n, 3)]
			equal = fmt.Sprintf("+%d: %s", n, strings.Join(ids, ","))
			if n > len(ids) {
				equal += ",…"
			}
		}
		m := e.Metrics
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%.0f\t%.1f\t%.1f\t%.0f\t%s\t%s\t%s\t%s\n", i+1, e.ID, score, e.UsedGPUs,
			m[schema.OutputThroughputTokS], m[schema.OutputThroughputPerGPUTokS], m[schema.PerUser.Key(schema.Mean)], m[schema.TTFT.Key(schema.P99)], sla, e.Label, strings.Join(cfg, " "), equal)
	}
	tw.Flush()
}

// writeRecommendation writes the ledger's files. A recommendation's YAML
// names its trace by absolute path (a config's paths are relative to the
// config, and the YAML lives elsewhere), so `dynosim predict -c` runs it
// as it is.
func writeRecommendation(out, cfgDir, trace string, sp *recommend.Space, l *recommend.Ledger, stderr io.Writer) (map[string]string, error) {
	if err := os.MkdirAll(filepath.Join(out, "recommendations"), 0o755); err != nil {
		return nil, err
	}
	js, err := l.JSON()
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(out, "recommendation.json"), js, 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(out, "recommendation.csv"), l.CSV(), 0o644); err != nil {
		return nil, err
	}
	abs, err := absolutePaths(sp.Base, cfgDir, trace)
	if err != nil {
		return nil, err
	}
	paths := map[string]string{}
	for i, e := range l.Recommended() {
		y, err := sp.RecommendationYAML(l, i, e, abs)
		if err != nil {
			return nil, err
		}
		p := filepath.Join(out, "recommendations", fmt.Sprintf("%04d.yaml", i+1))
		if err := os.WriteFile(p, y, 0o644); err != nil {
			return nil, err
		}
		paths[e.ID] = p
		if err := writeDeploy(filepath.Join(out, "deploy", fmt.Sprintf("%04d", i+1)), p, y); err != nil {
			// A deployment the files cannot express (docs/deploy.md) is
			// a note, not a failed search.
			fmt.Fprintf(stderr, "dynosim: deploy/%04d not written: %v\n", i+1, err)
		}
	}
	return paths, nil
}

// writeDeploy writes dir/launch.sh and dir/dgd.yaml (core/deploy) for the
// recommendation y, read from its file p.
func writeDeploy(dir, p string, y []byte) error {
	cfg, err := config.Parse(p, y, nil)
	if err != nil {
		return err
	}
	launch, dgd, err := deploy.Render(&cfg)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "launch.sh"), launch, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "dgd.yaml"), dgd, 0o644)
}

// absolutePaths are --sets that make the base config's file paths
// (traffic.source.paths, engine.model as a .json file) absolute. A
// --trace file (trace, relative to the working directory) replaces the
// paths as predict's --trace does: a trace source, and a synthetic load
// type dropped.
func absolutePaths(base []byte, dir, trace string) ([]string, error) {
	var c struct {
		Traffic struct {
			Source struct {
				Paths []string `yaml:"paths"`
			} `yaml:"source"`
			Load struct {
				Type string `yaml:"type"`
			} `yaml:"load"`
		} `yaml:"traffic"`
		Engine struct {
			Model string `yaml:"model"`
		} `yaml:"engine"`
	}
	if err := yaml.Unmarshal(base, &c); err != nil {
		return nil, err
	}
	abs := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		a, err := filepath.Abs(filepath.Join(dir, p))
		if err != nil {
			return p
		}
		return a
	}
	var sets []string
	if trace != "" {
		a, err := filepath.Abs(trace)
		if err != nil {
			return nil, err
		}
		c.Traffic.Source.Paths = []string{a}
		sets = append(sets, "traffic.source.type=trace")
		if t := c.Traffic.Load.Type; t == "poisson" || t == "constant_rate" {
			sets = append(sets, `traffic.load.type=""`)
		}
	}
	if ps := c.Traffic.Source.Paths; len(ps) > 0 {
		q := make([]string, len(ps))
		for i, p := range ps {
			b, _ := json.Marshal(abs(p)) // a JSON string is a YAML flow scalar
			q[i] = string(b)
		}
		sets = append(sets, "traffic.source.paths=["+strings.Join(q, ", ")+"]")
	}
	if m := c.Engine.Model; strings.HasSuffix(m, ".json") {
		b, _ := json.Marshal(abs(m))
		sets = append(sets, "engine.model="+string(b))
	}
	return sets, nil
}
