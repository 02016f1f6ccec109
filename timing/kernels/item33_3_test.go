package kernels_test

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"testing"

	"github.com/dynosim/dynosim-web/timing/kernels"
	"github.com/dynosim/dynosim-web/timing/kernels/kerneldata"
)

// loadAll decodes every embedded table, keyed "gpu,engine".
func loadAll(t *testing.T) map[string]*kernels.Table {
	t.Helper()
	out := map[string]*kernels.Table{}
	for _, name := range kerneldata.Names() {
		if !bytes.HasSuffix([]byte(name), []byte(".json.gz")) {
			continue
		}
		z, err := os.ReadFile("kerneldata/" + name)
		if err != nil {
			t.Fatal(err)
		}
		b, err := kerneldata.Gunzip(z)
		if err != nil {
			t.Fatal(err)
		}
		tb, err := kernels.Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		out[tb.GPU+","+tb.Engine] = tb
	}
	if len(out) < 18 {
		t.Fatalf("%d tables, want 18 (6 GPUs × 3 engines)", len(out))
	}
	return out
}

// TestItem33_3TablesReproduceSourceRows checks that every compiled table,
// looked up through the interpolation the simulator uses, reproduces
// every 97th source row of AIC's parquet files (testdata/aic_samples.csv,
// written by tools/aictables -samples) within ±5 %. On a measured point
// the lookup is exact, so the tolerance is only a guard.
func TestItem33_3TablesReproduceSourceRows(t *testing.T) {
	tables := loadAll(t)
	f, err := os.Open("testdata/aic_samples.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	perTable := map[string]map[string]int{}
	for i, r := range rows[1:] {
		tb := tables[r[0]+","+r[1]]
		if tb == nil {
			t.Fatalf("row %d: no table %s-%s", i+2, r[0], r[1])
		}
		n := make([]float64, 7)
		for j := range n {
			n[j], _ = strconv.ParseFloat(r[4+j], 64)
		}
		want, _ := strconv.ParseFloat(r[11], 64)
		var got float64
		switch kind, dt := r[2], r[3]; kind {
		case "gemm":
			g := tb.FindGEMM(dt, int(n[0]), int(n[1]))
			if g == nil || g.Site != "measured" {
				t.Fatalf("row %d: %v: no measured curve", i+2, r)
			}
			got = g.Ms(n[2], tb.Peak)
			want = max(want, g.AICSOL(n[2], tb.Peak)) // AIC's load-time floor (TestItem33_3GEMMSOLFloor)
		case "context":
			c := tb.FindContext(int(n[0]), int(n[1]), int(n[2]), dt)
			if c == nil {
				t.Fatalf("row %d: %v: no grid", i+2, r)
			}
			got = c.Ms(n[4], n[3])
		case "generation":
			g := tb.FindGeneration(int(n[0]), int(n[1]), int(n[2]), dt)
			if g == nil {
				t.Fatalf("row %d: %v: no grid", i+2, r)
			}
			got = kernels.GenAt(g, n[3], n[4])
		case "moe":
			m := tb.FindMoE(dt, int(n[0]), int(n[1]), int(n[2]), int(n[3]), int(n[4]), int(n[5]))
			if m == nil {
				t.Fatalf("row %d: %v: no curve", i+2, r)
			}
			got = m.Ms(n[6])
		default:
			t.Fatalf("row %d: kind %q", i+2, kind)
		}
		if math.Abs(got/want-1) > 0.05 {
			t.Errorf("%v: table gives %g ms, source %g ms", r, got, want)
		}
		key := r[0] + "," + r[1]
		if perTable[key] == nil {
			perTable[key] = map[string]int{}
		}
		perTable[key][r[2]]++
	}
	// Every table is sampled in every kernel family it has.
	for key, tb := range tables {
		for kind, have := range map[string]int{"gemm": len(tb.GEMM), "context": len(tb.Context), "generation": len(tb.Generation), "moe": len(tb.MoE)} {
			if have > 0 && perTable[key][kind] == 0 {
				t.Errorf("%s: no %s source rows sampled", key, kind)
			}
		}
	}
}

// TestItem33_3IndependentExtracts checks the vLLM tables against the exact
// extracts of timing/testdata/aic (read from the same parquet files by a
// second, typed reader), wherever a compiled shape meets an extract row.
func TestItem33_3IndependentExtracts(t *testing.T) {
	tables := loadAll(t)
	gpu := map[string]string{"h100_sxm": "h100_sxm", "h200_sxm": "h200_sxm", "b200_sxm": "b200", "a100_sxm": "a100_80gb",
		"l40s": "l40s", "rtx_pro_6000_server": "rtx_pro_6000_server"}
	dtype := map[string]string{"bfloat16": "bf16", "fp8": "fp8"}
	read := func(name string) [][]string {
		f, err := os.Open("../testdata/aic/" + name)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		rows, err := csv.NewReader(f).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		return rows[1:]
	}
	num := func(s string) float64 { v, _ := strconv.ParseFloat(s, 64); return v }
	checked := map[string]int{}
	check := func(kind string, r []string, got, want float64) {
		checked[kind]++
		if math.Abs(got/want-1) > 0.05 {
			t.Errorf("%s %v: table %g ms, extract %g ms", kind, r, got, want)
		}
	}
	for _, r := range read("gemm.csv") { // system,version,dtype,m,n,k,latency_ms
		tb := tables[gpu[r[0]]+",vllm"]
		if g := tb.FindGEMM(dtype[r[2]], int(num(r[4])), int(num(r[5]))); g != nil && g.Site == "measured" {
			check("gemm", r, g.Ms(num(r[3]), tb.Peak), max(num(r[6]), g.AICSOL(num(r[3]), tb.Peak)))
		}
	}
	// system,version,batch_size,isl,prefix,num_heads,num_kv_heads,head_dim,kv_cache_dtype,kernel_source,latency_ms
	for _, r := range read("ctx_attn.csv") {
		tb := tables[gpu[r[0]]+",vllm"]
		if c := tb.FindContext(int(num(r[5])), int(num(r[6])), int(num(r[7])), dtype[r[8]]); c != nil && num(r[4]) == 0 {
			check("context", r, c.Ms(num(r[2]), num(r[3])), num(r[10]))
		}
	}
	// system,version,batch_size,kv_len,step,num_heads,num_kv_heads,head_dim,kv_cache_dtype,kernel_source,latency_ms
	for _, r := range read("gen_attn.csv") {
		tb := tables[gpu[r[0]]+",vllm"]
		if g := tb.FindGeneration(int(num(r[5])), int(num(r[6])), int(num(r[7])), dtype[r[8]]); g != nil {
			check("generation", r, kernels.GenAt(g, num(r[2]), num(r[3])), num(r[10]))
		}
	}
	for _, kind := range []string{"gemm", "context", "generation"} {
		if checked[kind] < 20 {
			t.Errorf("%s: only %d extract rows met a compiled shape", kind, checked[kind])
		}
	}
	t.Logf("checked %v", checked)
}

// TestItem33_3Interpolation pins the interpolation rules on a small table.
func TestItem33_3Interpolation(t *testing.T) {
	peak := kernels.Peak{BF16FLOPS: 1e15, MemBW: 3e12}
	g := &kernels.GEMM{DType: "bf16", N: 4096, K: 4096, M: []float64{1, 16, 1024, 2048, 4096}, Lat: []float64{0.01, 0.02, 0.05, 0.09, 0.17}}
	tb := &kernels.Table{Peak: peak,
		Context: []kernels.Context{{Heads: 8, KVHeads: 2, HeadDim: 128, KVDType: "bf16", Rows: []kernels.Series{
			{Key: 1024, X: []float64{1, 4}, Ms: []float64{0.04, 0.16}},
			{Key: 4096, X: []float64{1, 2}, Ms: []float64{0.64, 1.28}},
		}}},
		Generation: []kernels.Gen{{Heads: 8, KVHeads: 2, HeadDim: 128, KVDType: "fp8", Rows: []kernels.Series{
			{Key: 1, X: []float64{100, 200}, Ms: []float64{0.01, 0.02}},
			{Key: 3, X: []float64{100, 200}, Ms: []float64{0.03, 0.06}},
		}}}}
	kernels.Prepare(tb)
	c, gen := &tb.Context[0], &tb.Generation[0]
	csol := func(s, b float64) float64 { return kernels.ContextSOL(c, s, b) }
	gsol := func(b, s float64) float64 { return kernels.GenSOL(gen, b, s) }
	med := g.SOL(2048, peak) / 0.09 // the median utilisation of the last three here
	for _, tc := range []struct {
		name      string
		got, want float64
	}{
		{"gemm exact", g.Ms(16, peak), 0.02},
		{"gemm between", g.Ms(1536, peak), 0.07},
		{"gemm below holds", g.Ms(0.5, peak), 0.01},
		{"gemm beyond holds median utilisation", g.Ms(8192, peak), g.SOL(8192, peak) / med},
		{"context exact", c.Ms(4, 1024), 0.16},
		{"context sqrt blend on seq", c.Ms(1, 2560), math.Pow((0.2+0.8)/2, 2)},
		// One bracketing row covers batch 3: its value, utilisation held along seq.
		{"context one-sided row", c.Ms(3, 2560), 0.12 * csol(2560, 3) / csol(1024, 3)},
		{"context beyond seq: hold", c.Ms(1, 8192), shepard(c.Rows, 8192, 1, csol)},
		{"context beyond batch: hold", c.Ms(4, 4096), shepard(c.Rows, 4096, 4, csol)},
		{"generation bilinear", kernels.GenAt(gen, 2, 150), 0.03},
		{"generation beyond batch: hold", kernels.GenAt(gen, 6, 100), shepard(gen.Rows, 6, 100, gsol)},
		{"generation beyond length: hold", kernels.GenAt(gen, 1, 400), shepard(gen.Rows, 1, 400, gsol)},
		// Five lengths from ⌊0.9·150⌋ to ⌊1.1·150⌋, as AIC's integer steps.
		{"generation averages ±10 %", gen.Ms(1, 150), (kernels.GenAt(gen, 1, 135) + kernels.GenAt(gen, 1, 142) + kernels.GenAt(gen, 1, 150) +
			kernels.GenAt(gen, 1, 157) + kernels.GenAt(gen, 1, 165)) / 5},
	} {
		if math.Abs(tc.got-tc.want) > 1e-12*max(1, tc.want) {
			t.Errorf("%s: got %g, want %g", tc.name, tc.got, tc.want)
		}
	}
}

// shepard is AIC's multi-axis hold written out plainly (perf_interp.rs
// grid_hold @ 095f58a5): every measured point by distance in joint log2
// space, the nearest four weighted ((R − d)/(R·d))² with R the fifth's
// distance, their utilisation held against SOL at the query.
func shepard(rows []kernels.Series, outer, inner float64, sol func(o, i float64) float64) float64 {
	type pt struct{ d, u float64 }
	var pts []pt
	for _, r := range rows {
		for i, x := range r.X {
			d := math.Hypot(math.Log2(r.Key)-math.Log2(outer), math.Log2(x)-math.Log2(inner))
			pts = append(pts, pt{d, sol(r.Key, x) / r.Ms[i]})
		}
	}
	sort.SliceStable(pts, func(i, j int) bool { return pts[i].d < pts[j].d })
	radius := math.Inf(1)
	if len(pts) > 4 {
		radius = pts[4].d
		pts = pts[:4]
	}
	var ws, us float64
	for _, p := range pts {
		w := 1 / (p.d * p.d)
		if !math.IsInf(radius, 1) {
			w = math.Pow((radius-p.d)/(radius*p.d), 2)
		}
		ws += w
		us += w * p.u
	}
	return sol(outer, inner) / (us / ws)
}

// TestItem33_3Provenance checks that every table names its source.
func TestItem33_3Provenance(t *testing.T) {
	for key, tb := range loadAll(t) {
		p := tb.Provenance
		if p.Repository != "https://github.com/ai-dynamo/aiconfigurator" || len(p.Commit) != 40 || p.Licence != "Apache-2.0" || p.Notice == "" {
			t.Errorf("%s: provenance %+v", key, p)
		}
		if len(p.Sources) == 0 {
			t.Errorf("%s: no sources", key)
		}
		for _, s := range p.Sources {
			if len(s.Blob) != 40 || s.Version == "" || s.Path == "" {
				t.Errorf("%s: source %+v", key, s)
			}
		}
		if want := fmt.Sprintf("aic %s", tb.Engine); len(tb.Label()) <= len(want) {
			t.Errorf("%s: label %q", key, tb.Label())
		}
	}
}
