package kernels_test

import (
	"math"
	"testing"
)

// TestItem33_3GEMMSOLFloor: no GEMM point of any table is faster than
// AIC's speed of light, which AIC's loader raises measured points to
// (perf_database/gemm.rs clamp_gemm_grids_to_sol @ 095f58a5). The
// compiler used to keep the raw rows: 694 of the L40S vLLM table's
// measured points were below it (to 0.43×, memory-bound GEMMs whose
// weights stay in its 96 MB L2 across a back-to-back benchmark), 292 of
// the RTX PRO 6000 Server's, 3 of H100's. Only measured sites are floored
// (transferred ones are priced through the floored sites' utilisations).
// The pinned rows are gemm_perf.parquet rows of l40s vLLM 0.24.0 (raw in
// the comments) and the floor they take.
func TestItem33_3GEMMSOLFloor(t *testing.T) {
	tables := loadAll(t)
	for key, tb := range tables {
		for _, g := range tb.GEMM {
			if g.Site != "measured" {
				continue
			}
			for i, m := range g.M {
				if sol := g.AICSOL(m, tb.Peak); g.Lat[i] < sol*(1-1e-12) {
					t.Errorf("%s: %s %dx%d (%s) m %g: %g ms below AIC's speed of light %g", key, g.DType, g.N, g.K, g.Site, m, g.Lat[i], sol)
				}
			}
		}
	}
	l40s := tables["l40s,vllm"]
	for _, c := range []struct {
		dtype  string
		n, k   int
		m      float64
		wantMs float64 // AIC's floor: bytes (mn + mk + nk) × elem / 864 GB/s
	}{
		{"bf16", 512, 7168, 1, 1000 * 2 * (512 + 7168 + 512*7168) / 864e9},        // raw 0.007083 ms
		{"bf16", 512, 7168, 64, 1000 * 2 * (64*512 + 64*7168 + 512*7168) / 864e9}, // raw 0.007025 ms
	} {
		g := l40s.FindGEMM(c.dtype, c.n, c.k)
		if g == nil {
			t.Fatalf("l40s vllm: no %s %dx%d", c.dtype, c.n, c.k)
		}
		if got := g.Ms(c.m, l40s.Peak); math.Abs(got/c.wantMs-1) > 1e-12 {
			t.Errorf("l40s vllm %s %dx%d m %g: %g ms, want AIC's floor %g", c.dtype, c.n, c.k, c.m, got, c.wantMs)
		}
	}
}
