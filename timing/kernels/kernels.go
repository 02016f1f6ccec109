// Package kernels holds measured kernel tables compiled from
// AIConfigurator's performance database (github.com/ai-dynamo/aiconfigurator,
// Apache-2.0) for the shapes of the timing catalog's models, one table per
// (GPU, engine), and interpolates them the way AIConfigurator does.
//
// A table is a JSON document (data/<gpu>-<engine>.json, written by
// tools/aictables) that names its provenance: repository, commit, licence,
// and per source table the parquet path, git blob and engine version. The
// package does no I/O: a front end hands it the bytes (the CLI embeds them,
// the page fetches them), so every front end prices with the same numbers.
//
// Interpolation, after AIConfigurator's perf_interp (aic-core/rust/
// aiconfigurator-core/src/perf_database/perf_interp.rs, described here in
// our own words):
//   - GEMM: each collected (n, k) owns a latency curve over m (tokens). A
//     query between two measured m is a straight line between them; beyond
//     the last measured m the utilisation (speed-of-light time over measured
//     time) of the last three points (their median) is held, so the
//     latency grows with the speed-of-light time. An (n, k) AIC did not
//     collect is transferred from the (at most four) nearest collected
//     sites within two octaves in log2(n), log2(k), weighting each site's
//     utilisation by 1/distance²; tools/aictables does that once at
//     compile time for every m, so a table row is already the model's
//     exact shape.
//   - Context attention: a grid over (sequence length, batch) at fixed
//     heads, KV heads and head size; generation attention: a grid over
//     (batch, KV length), each query averaged over five KV lengths spread
//     ±10 % around it (AIC's smoothing of a decode batch's drifting
//     lengths). Both resolve as AIC's Grid resolver (grid.go): blends
//     inside the grid (context in √latency along sequence length, which
//     attention grows with the square of), a one-sided row's utilisation
//     held across the outer axis, and past the grid (or in its truncated
//     large-batch × long-sequence corner) the utilisation of the four
//     nearest measured points in log2 space, Shepard-weighted, held
//     against the op's speed of light. A cached prefix scales the full
//     sequence's latency by (seq² − prefix²)/seq², as AIC's operator
//     does (the caller's job).
//   - MoE: a layer's routed experts over the tokens entering it (routed
//     as AIC's model of the checkpoint routes them: its power-law
//     workload distribution, MoE.Distribution), a straight line between
//     measured token counts, the boundary utilisation held beyond them.
//
// Differences from AIC, all deliberate: speed of light uses the timing
// catalog's peak FLOPS and bandwidth (written into the table) rather than
// AIC's system files; the attention hold draws its anchors from the
// model's own head layout only (grid.go).
package kernels

import (
	"encoding/json"
	"fmt"
	"sort"
)

// Format is the table format version this package reads.
const Format = 1

// Table is one (GPU, engine) kernel table.
type Table struct {
	Format     int        `json:"format"`
	GPU        string     `json:"gpu"`        // timing catalog name, e.g. "h100_sxm"
	AICSystem  string     `json:"aic_system"` // AIC's system directory, e.g. "h100_sxm"
	Engine     string     `json:"engine"`     // vllm, sglang or trtllm
	Provenance Provenance `json:"provenance"`
	Peak       Peak       `json:"peak"`
	GEMM       []GEMM     `json:"gemm"`
	Context    []Context  `json:"context_attention"`
	Generation []Gen      `json:"generation_attention"`
	MoE        []MoE      `json:"moe"`
	// Quant: FP8 activation-quantisation costs, sorted by (Op, K)
	// (quant.go); absent in tables compiled before they were.
	Quant []Quant `json:"fp8_quant,omitempty"`
}

// Provenance names where a table's numbers come from.
type Provenance struct {
	Repository string   `json:"repository"`
	Commit     string   `json:"commit"`
	Licence    string   `json:"licence"`
	Notice     string   `json:"notice"`
	Sources    []Source `json:"sources"`
}

// Source is one parquet file a table was compiled from.
type Source struct {
	Table   string `json:"table"`   // gemm_perf, context_attention_perf, …
	Path    string `json:"path"`    // relative to the repository root
	Blob    string `json:"blob"`    // git blob id
	Version string `json:"version"` // engine version directory read
}

// Peak is the speed of light the extrapolations use (the timing catalog's
// numbers for the GPU).
type Peak struct {
	BF16FLOPS float64 `json:"bf16_flops"`
	FP8FLOPS  float64 `json:"fp8_flops"`
	MemBW     float64 `json:"mem_bw"` // bytes/s
}

// GEMM is one weight GEMM shape's latency curve over m.
type GEMM struct {
	DType string    `json:"dtype"` // bf16 or fp8
	N     int       `json:"n"`
	K     int       `json:"k"`
	Site  string    `json:"site"` // "measured" or "transferred" (IDW of neighbours)
	M     []float64 `json:"m"`
	Lat   []float64 `json:"ms"` // latency at each M
}

// Context is context (prefill) attention of one layer at one head
// configuration: Rows by sequence length, each over batch.
type Context struct {
	Heads   int      `json:"heads"` // query heads per GPU
	KVHeads int      `json:"kv_heads"`
	HeadDim int      `json:"head_dim"`
	KVDType string   `json:"kv_dtype"` // bf16 or fp8
	Rows    []Series `json:"rows"`     // Key = sequence length; X = batch
	grid    grid     // prepared by Decode (grid.go)
}

// Gen is generation (decode) attention of one layer: Rows by batch, each
// over KV length.
type Gen struct {
	Heads   int      `json:"heads"`
	KVHeads int      `json:"kv_heads"`
	HeadDim int      `json:"head_dim"`
	KVDType string   `json:"kv_dtype"`
	Rows    []Series `json:"rows"` // Key = batch; X = KV length
	grid    grid     // prepared by Decode (grid.go)
}

// MoE is one MoE layer's routed experts (AIC's moe op: the grouped expert
// GEMMs of a layer) over the tokens entering it, with tokens routed as
// AIC's own model of the catalog model routes them (Distribution).
type MoE struct {
	DType   string `json:"dtype"` // bf16 or fp8
	Hidden  int    `json:"hidden"`
	Inter   int    `json:"inter"` // one expert's intermediate size
	TopK    int    `json:"topk"`
	Experts int    `json:"experts"`
	TP      int    `json:"moe_tp"`
	EP      int    `json:"moe_ep"`
	// Distribution is AIC's moe_perf workload distribution of the curve:
	// the one AIC's model class prices the layer with ("power_law_1.01"
	// for Llama 4 and DeepSeek, "power_law_1.2" for Qwen3 MoE;
	// tools/aictables moeDistribution), "balanced" where AIC measured
	// only that. Empty in tables compiled before it was recorded (all
	// balanced).
	Distribution string `json:"distribution,omitempty"`
	Curve        Series `json:"curve"` // X = tokens; Key unused
}

// Ms is the layer's latency over tokens: straight lines between measured
// token counts, the first held below them, the boundary utilisation held
// beyond (speed of light taken as the FLOPs, ∝ tokens).
func (m *MoE) Ms(tokens float64) float64 { return m.Curve.at(tokens, identity) }

// FindMoE returns the MoE curve of a layer layout, or nil.
func (t *Table) FindMoE(dtype string, hidden, inter, topk, experts, tp, ep int) *MoE {
	for i := range t.MoE {
		if m := &t.MoE[i]; m.DType == dtype && m.Hidden == hidden && m.Inter == inter && m.TopK == topk &&
			m.Experts == experts && m.TP == tp && m.EP == ep {
			return m
		}
	}
	return nil
}

// Series is one measured row of a grid: latency Ms at each X.
type Series struct {
	Key float64   `json:"key"`
	X   []float64 `json:"x"`
	Ms  []float64 `json:"ms"`
}

// Decode parses and checks a table.
func Decode(b []byte) (*Table, error) {
	t, ok := decodeFast(b)
	if !ok {
		t = Table{}
		if err := json.Unmarshal(b, &t); err != nil {
			return nil, fmt.Errorf("kernel table: %v", err)
		}
	}
	if t.Format != Format {
		return nil, fmt.Errorf("kernel table: format %d, want %d", t.Format, Format)
	}
	if t.Peak.BF16FLOPS <= 0 || t.Peak.MemBW <= 0 {
		return nil, fmt.Errorf("kernel table %s-%s: peak FLOPS and bandwidth must be > 0", t.GPU, t.Engine)
	}
	for i, g := range t.GEMM {
		if err := checkSeries(g.M, g.Lat); err != nil {
			return nil, fmt.Errorf("kernel table %s-%s: gemm %d (%dx%d %s): %v", t.GPU, t.Engine, i, g.N, g.K, g.DType, err)
		}
	}
	for i, c := range t.Context {
		if err := checkRows(c.Rows); err != nil {
			return nil, fmt.Errorf("kernel table %s-%s: context attention %d: %v", t.GPU, t.Engine, i, err)
		}
	}
	for i, g := range t.Generation {
		if err := checkRows(g.Rows); err != nil {
			return nil, fmt.Errorf("kernel table %s-%s: generation attention %d: %v", t.GPU, t.Engine, i, err)
		}
	}
	for i, m := range t.MoE {
		if err := checkSeries(m.Curve.X, m.Curve.Ms); err != nil {
			return nil, fmt.Errorf("kernel table %s-%s: moe %d: %v", t.GPU, t.Engine, i, err)
		}
	}
	for i, q := range t.Quant {
		if err := checkDeltas(q.Curve.X, q.Curve.Ms); err != nil {
			return nil, fmt.Errorf("kernel table %s-%s: fp8 quant %d: %v", t.GPU, t.Engine, i, err)
		}
		if p := t.Quant[max(i-1, 0)]; i > 0 && (p.Op > q.Op || p.Op == q.Op && p.K >= q.K) {
			return nil, fmt.Errorf("kernel table %s-%s: fp8 quant not sorted by (op, k) at %d", t.GPU, t.Engine, i)
		}
	}
	t.prepare()
	return &t, nil
}

func checkRows(rows []Series) error {
	if len(rows) == 0 {
		return fmt.Errorf("no rows")
	}
	for i, r := range rows {
		if i > 0 && r.Key <= rows[i-1].Key {
			return fmt.Errorf("row keys not increasing at %g", r.Key)
		}
		if err := checkSeries(r.X, r.Ms); err != nil {
			return fmt.Errorf("row %g: %v", r.Key, err)
		}
	}
	return nil
}

func checkSeries(x, ms []float64) error {
	if len(x) == 0 || len(x) != len(ms) {
		return fmt.Errorf("%d points, %d latencies", len(x), len(ms))
	}
	if !sort.Float64sAreSorted(x) {
		return fmt.Errorf("points not sorted")
	}
	for i := range x {
		if i > 0 && x[i] == x[i-1] {
			return fmt.Errorf("duplicate point %g", x[i])
		}
		if !(ms[i] > 0) {
			return fmt.Errorf("latency %g at %g: must be > 0", ms[i], x[i])
		}
	}
	return nil
}

// FileName is the file a table of gpu (timing.KernelTableGPU) under engine
// is shipped in: kerneldata embeds them for the CLI, and the page fetches
// them from kernels/<FileName> beside its wasm.
func FileName(gpu, engine string) string { return gpu + "-" + engine + ".json.gz" }

// Label names the table for reports: "aic vllm 0.24.0 h100_sxm".
func (t *Table) Label() string {
	v := ""
	for _, s := range t.Provenance.Sources {
		if s.Table == "gemm_perf" {
			v = " " + s.Version
		}
	}
	return fmt.Sprintf("aic %s%s %s", t.Engine, v, t.AICSystem)
}

// FindGEMM returns the curve of an (n, k) weight GEMM in dtype, or nil.
func (t *Table) FindGEMM(dtype string, n, k int) *GEMM {
	for i := range t.GEMM {
		if g := &t.GEMM[i]; g.DType == dtype && g.N == n && g.K == k {
			return g
		}
	}
	return nil
}

// FindContext returns the context-attention grid of a head layout, or nil.
func (t *Table) FindContext(heads, kvHeads, headDim int, kvDType string) *Context {
	for i := range t.Context {
		if c := &t.Context[i]; c.Heads == heads && c.KVHeads == kvHeads && c.HeadDim == headDim && c.KVDType == kvDType {
			return c
		}
	}
	return nil
}

// FindGeneration returns the generation-attention grid of a head layout,
// or nil.
func (t *Table) FindGeneration(heads, kvHeads, headDim int, kvDType string) *Gen {
	for i := range t.Generation {
		if g := &t.Generation[i]; g.Heads == heads && g.KVHeads == kvHeads && g.HeadDim == headDim && g.KVDType == kvDType {
			return g
		}
	}
	return nil
}
