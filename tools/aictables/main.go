// Command aictables compiles AIConfigurator's measured kernel tables
// (github.com/ai-dynamo/aiconfigurator, Apache-2.0) into the compact
// per-(GPU, engine) tables timing/kernels reads, keeping only the shapes
// of the timing catalog's models (tensor parallel 1, 2, 4, 8; bf16 and
// fp8 where measured). It reads the parquet blobs straight from a bare
// git mirror at one commit, so the output names exactly what it came
// from.
//
//	go run . -mirror /work/.mirror/ai-dynamo+aiconfigurator/repo \
//	    -commit 095f58a51c4ca8e61b66ec108d86f223f8d559ce -out ../../timing/kernels/data
//
// It lives in its own module so the simulator does not depend on a
// parquet reader.
package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/dynosim/dynosim-web/timing"
	"github.com/dynosim/dynosim-web/timing/kernels"
)

const (
	dataDir = "aic-core/src/aiconfigurator_core/systems/data/"
	repoURL = "https://github.com/ai-dynamo/aiconfigurator"
	notice  = "Derived from AIConfigurator's performance database (Apache-2.0; see timing/kernels/kerneldata/LICENSE and README.md): " +
		"rows were selected at the timing catalog's model shapes, GEMM sites AIC did not collect were transferred from " +
		"neighbouring sites as AIC's interpolation does, GEMM latencies below AIC's speed of light were raised to it as AIC's loader does, " +
		"and columns were renamed. Measured latencies are otherwise unchanged."
)

// systems maps the timing catalog's GPU names to AIC's system directories.
var systems = [][2]string{
	{"h100_sxm", "h100_sxm"}, {"h200_sxm", "h200_sxm"}, {"b200", "b200_sxm"},
	{"a100_80gb", "a100_sxm"}, {"l40s", "l40s"}, {"rtx_pro_6000_server", "rtx_pro_6000_server"},
}

var engines = []string{"vllm", "sglang", "trtllm"}

func main() {
	mirror := flag.String("mirror", "", "bare git mirror of ai-dynamo/aiconfigurator")
	commit := flag.String("commit", "", "commit to read (40 hex digits)")
	out := flag.String("out", "", "output directory")
	sampleFile := flag.String("samples", "", "also write every 97th source row here (CSV, for tests)")
	flag.Parse()
	if *mirror == "" || len(*commit) != 40 || *out == "" {
		flag.Usage()
		os.Exit(2)
	}
	g := &git{dir: *mirror, commit: *commit}
	files, err := g.ls(dataDir)
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range systems {
		for _, e := range engines {
			samples.start(s[0], e)
			t, err := compile(g, files, s[0], s[1], e)
			if err != nil {
				log.Fatalf("%s %s: %v", s[0], e, err)
			}
			if t == nil {
				log.Printf("%s %s: no tables", s[0], e)
				continue
			}
			b, err := json.Marshal(t)
			if err != nil {
				log.Fatal(err)
			}
			// Check the round trip with the reader the simulator uses.
			if _, err := kernels.Decode(b); err != nil {
				log.Fatal(err)
			}
			// gzip without a name or time in the header: the same input
			// writes the same bytes.
			var z bytes.Buffer
			w, _ := gzip.NewWriterLevel(&z, gzip.BestCompression)
			w.Write(append(b, '\n'))
			if err := w.Close(); err != nil {
				log.Fatal(err)
			}
			name := filepath.Join(*out, s[0]+"-"+e+".json.gz")
			if err := os.WriteFile(name, z.Bytes(), 0o644); err != nil {
				log.Fatal(err)
			}
			log.Printf("%s: %d gemm, %d context, %d generation, %d moe, %d bytes", name, len(t.GEMM), len(t.Context), len(t.Generation), len(t.MoE), z.Len())
		}
	}
	if *sampleFile != "" {
		if err := os.WriteFile(*sampleFile, []byte(samples.csv()), 0o644); err != nil {
			log.Fatal(err)
		}
	}
}

type git struct{ dir, commit string }

func (g *git) ls(prefix string) ([]string, error) {
	b, err := exec.Command("git", "-C", g.dir, "ls-tree", "-r", "--name-only", g.commit, prefix).Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-tree: %v", err)
	}
	return strings.Fields(string(b)), nil
}

func (g *git) show(path string) ([]byte, error) {
	b, err := exec.Command("git", "-C", g.dir, "show", g.commit+":"+path).Output()
	if err != nil {
		return nil, fmt.Errorf("git show %s: %v", path, err)
	}
	return b, nil
}

func (g *git) blob(path string) (string, error) {
	b, err := exec.Command("git", "-C", g.dir, "rev-parse", g.commit+":"+path).Output()
	if err != nil {
		return "", fmt.Errorf("git rev-parse %s: %v", path, err)
	}
	return strings.TrimSpace(string(b)), nil
}

// newest returns the path of the newest engine version directory under
// <system>/<family>/<engine>/ that holds file itself (a version with only
// a reuse.yaml points at data another version directory holds).
func newest(files []string, system, family, engine, file string) (path, version string) {
	prefix := dataDir + system + "/" + family + "/" + engine + "/"
	for _, f := range files {
		rest, ok := strings.CutPrefix(f, prefix)
		if !ok || !strings.HasSuffix(rest, "/"+file) || strings.Count(rest, "/") != 1 {
			continue
		}
		v := strings.TrimSuffix(rest, "/"+file)
		if version == "" || versionLess(version, v) {
			path, version = f, v
		}
	}
	return path, version
}

// versionLess orders "0.5.9" < "0.5.10" and "1.3.0rc15" < "1.3.0rc20" <
// "1.3.0".
func versionLess(a, b string) bool {
	pa, pb := versionKey(a), versionKey(b)
	for i := range min(len(pa), len(pb)) {
		if pa[i] != pb[i] {
			return pa[i] < pb[i]
		}
	}
	return len(pa) < len(pb)
}

func versionKey(v string) []int {
	rc := 1 << 30 // a final release sorts after its candidates
	if i := strings.Index(v, "rc"); i >= 0 {
		fmt.Sscan(v[i+2:], &rc)
		v = v[:i]
	}
	var k []int
	for _, p := range strings.Split(v, ".") {
		n := 0
		fmt.Sscan(p, &n)
		k = append(k, n)
	}
	return append(k, rc)
}

// shapes collects the catalog models' kernel shapes on one GPU.
type shapes struct {
	gemm map[[3]int]bool // dtype index (0 bf16, 1 fp8), n, k
	attn map[[3]int]bool // heads, kv heads, head dim per GPU
	// moe: dtype index, hidden, inter, topk, experts, moe tp, moe ep →
	// the routing distribution AIC prices that model's MoE with
	// (moeDistribution).
	moe map[[7]int]string
}

// moeDistribution is the moe_perf workload distribution AIC's own model
// prices a catalog MoE model's layers with: its ModelConfig default
// workload_distribution "power_law" with the model class's alpha
// (sdk/config.py; sdk/models/helpers.py power_law_distribution;
// _power_law_alpha in sdk/models/moe.py (MOEModel, Qwen3MoeForCausalLM:
// 1.2), hybrid_moe.py (HybridMoEModel, Llama4ForConditionalGeneration:
// 1.01) and deepseek.py (DeepseekV3ForCausalLM: 1.01); the architecture →
// family map is sdk/common.py, all @ 095f58a5). "balanced" (every expert
// loaded evenly: all 16 of Scout's experts touched by 16 top-1 tokens) is
// AIC's worst case, not the roofline's uniform random routing (64 % of
// them touched), nor what AIC predicts with.
func moeDistribution(model string) (string, bool) {
	switch model {
	case "qwen3-30b-a3b", "qwen3-235b-a22b":
		return "power_law_1.2", true
	case "llama-4-scout-17b-16e", "deepseek-v3":
		return "power_law_1.01", true
	}
	return "", false
}

func catalogShapes(gpu string) shapes {
	s := shapes{gemm: map[[3]int]bool{}, attn: map[[3]int]bool{}, moe: map[[7]int]string{}}
	for _, model := range timing.ModelNames() {
		for _, tp := range []int{1, 2, 4, 8} {
			for li, di := range []int{0, 1, 0, 1} {
				dtype := dtypeNames[di]
				par := timing.Parallelism{Tensor: tp}
				if li >= 2 { // experts split expert-parallel instead
					par.MoETensor, par.MoEExpert = 1, tp
				}
				r, err := timing.NewRoofline(timing.RooflineSpec{Model: model, Hardware: gpu, DType: dtype, Parallelism: par})
				if err != nil {
					continue // e.g. fp8 on a GPU without FP8 tensor cores, or TP not dividing the heads
				}
				ks := r.KernelShapes()
				for i, g := range ks.GEMM {
					d := di
					if i == len(ks.GEMM)-1 {
						d = 0 // lm_head stays bf16
					}
					s.gemm[[3]int{d, g[0], g[1]}] = true
				}
				if ks.Heads > 0 {
					s.attn[[3]int{ks.Heads, ks.KVHeads, ks.HeadDim}] = true
				}
				if e := ks.MoE; e[0] > 0 {
					dist, ok := moeDistribution(model)
					if !ok {
						log.Fatalf("%s: a MoE model without AIC's routing distribution (moeDistribution)", model)
					}
					k := [7]int{di, e[0], e[1], e[2], e[3], e[4], e[5]}
					if d, dup := s.moe[k]; dup && d != dist {
						log.Fatalf("%s: MoE layout %v is priced as %s by another model, as %s by this one", model, k, d, dist)
					}
					s.moe[k] = dist
				}
			}
		}
	}
	return s
}

func sortedKeys(m map[[3]int]bool) [][3]int {
	var ks [][3]int
	for k := range m {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool {
		a, b := ks[i], ks[j]
		for x := range a {
			if a[x] != b[x] {
				return a[x] < b[x]
			}
		}
		return false
	})
	return ks
}

func compile(g *git, files []string, gpu, system, engine string) (*kernels.Table, error) {
	spec, err := timing.LookupGPU(gpu)
	if err != nil {
		return nil, err
	}
	t := &kernels.Table{Format: kernels.Format, GPU: gpu, AICSystem: system, Engine: engine,
		Provenance: kernels.Provenance{Repository: repoURL, Commit: g.commit, Licence: "Apache-2.0", Notice: notice},
		Peak:       kernels.Peak{BF16FLOPS: spec.BF16FLOPS, FP8FLOPS: spec.FP8FLOPS, MemBW: spec.MemBW}}
	sh := catalogShapes(gpu)
	gemmVersion := ""
	read := func(family, file string) ([]byte, error) {
		p, v := newest(files, system, family, engine, file)
		if family == "quantize" {
			// The quantisation costs are subtracted from the fp8 GEMM rows:
			// only the same engine version's measurements go with them.
			p, v = dataDir+system+"/quantize/"+engine+"/"+gemmVersion+"/"+file, gemmVersion
			if gemmVersion == "" || !slices.Contains(files, p) {
				return nil, nil
			}
		}
		if p == "" {
			return nil, nil
		}
		if family == "gemm" {
			gemmVersion = v
		}
		b, err := g.show(p)
		if err != nil {
			return nil, err
		}
		blob, err := g.blob(p)
		if err != nil {
			return nil, err
		}
		t.Provenance.Sources = append(t.Provenance.Sources, kernels.Source{Table: strings.TrimSuffix(file, ".parquet"),
			Path: p, Blob: blob, Version: v})
		return b, nil
	}
	b, err := read("gemm", "gemm_perf.parquet")
	if err != nil {
		return nil, err
	}
	if b != nil {
		if t.GEMM, err = compileGEMM(b, sh, t.Peak); err != nil {
			return nil, fmt.Errorf("gemm: %v", err)
		}
	}
	for _, q := range [][2]string{{kernels.ComputeScale, "computescale_perf.parquet"}, {kernels.ScaleMatrix, "scale_matrix_perf.parquet"}} {
		if b, err = read("quantize", q[1]); err != nil {
			return nil, err
		}
		if b != nil {
			qs, err := compileQuant(b, q[0], sh)
			if err != nil {
				return nil, fmt.Errorf("%s: %v", q[1], err)
			}
			t.Quant = append(t.Quant, qs...)
		}
	}
	if b, err = read("attention", "context_attention_perf.parquet"); err != nil {
		return nil, err
	}
	if b != nil {
		if t.Context, _, err = compileAttention(b, sh, false); err != nil {
			return nil, fmt.Errorf("context attention: %v", err)
		}
	}
	if b, err = read("attention", "generation_attention_perf.parquet"); err != nil {
		return nil, err
	}
	if b != nil {
		if _, t.Generation, err = compileAttention(b, sh, true); err != nil {
			return nil, fmt.Errorf("generation attention: %v", err)
		}
	}
	if b, err = read("moe", "moe_perf.parquet"); err != nil {
		return nil, err
	}
	if b != nil {
		if t.MoE, err = compileMoE(b, sh, engine); err != nil {
			return nil, fmt.Errorf("moe: %v", err)
		}
	}
	if len(t.GEMM)+len(t.Context)+len(t.Generation) == 0 {
		return nil, nil
	}
	return t, nil
}
