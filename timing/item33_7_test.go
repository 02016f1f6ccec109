package timing

import (
	"strings"
	"testing"
)

// TestItem33_7GPUSources: every GPU of the catalog names at least one
// public source, none is blank, and no source is listed for a GPU the
// catalog does not have.
func TestItem33_7GPUSources(t *testing.T) {
	for _, name := range GPUNames() {
		src := GPUSources(name)
		if len(src) == 0 {
			t.Errorf("%s: no public source in gpuSources (gpusources.go)", name)
		}
		for i, s := range src {
			if strings.TrimSpace(s) == "" {
				t.Errorf("%s: source %d is blank", name, i)
			}
		}
	}
	for name := range gpuSources {
		if _, err := LookupGPU(name); err != nil {
			t.Errorf("gpuSources lists %q: %v", name, err)
		}
	}
}

// TestItem33_7RTXProServer: the Server Edition is its own entry, differing
// from the Workstation where the hardware does (memory bandwidth 1,597 vs
// 1,792 GB/s) and not elsewhere; its curves are AIConfigurator's
// measurements of that board, so on every shape it is priced exactly as
// the Workstation entry, whose curves are those same measurements, was.
func TestItem33_7RTXProServer(t *testing.T) {
	ws, err := LookupGPU("rtx_pro_6000")
	if err != nil {
		t.Fatal(err)
	}
	sv, err := LookupGPU("RTX-PRO-6000-server")
	if err != nil {
		t.Fatal(err)
	}
	if sv.MemBW != 1597e9 || ws.MemBW != 1792e9 {
		t.Errorf("memory bandwidth server %v, workstation %v; want 1,597 and 1,792 GB/s", sv.MemBW, ws.MemBW)
	}
	same := ws
	same.Name, same.MemBW = sv.Name, sv.MemBW
	if sv != same {
		t.Errorf("server %+v differs from the workstation %+v beyond memory bandwidth", sv, ws)
	}
	cw, cs := CurvesFor("rtx_pro_6000"), CurvesFor("rtx_pro_6000_server")
	for _, tc := range []struct {
		name         string
		m, n, k, wbs float64
	}{
		{"decode bf16", 8, 8192, 8192, 2},
		{"prefill bf16", 8192, 8192, 28672, 2},
		{"decode fp8", 64, 8192, 8192, 1},
		{"decode fp4", 16, 28672, 8192, 0.5},
	} {
		w, s := cw.GEMMMs(tc.m, tc.n, tc.k, tc.wbs, ws), cs.GEMMMs(tc.m, tc.n, tc.k, tc.wbs, sv)
		if d := s/w - 1; d > 1e-9 || d < -1e-9 {
			t.Errorf("%s: server %.6f ms, workstation %.6f ms: the measured rates should carry over", tc.name, s, w)
		}
	}
	if w, s := cw.DecodeAttnMs(64, 512<<20, ws), cs.DecodeAttnMs(64, 512<<20, sv); s/w-1 > 1e-9 || s/w-1 < -1e-9 {
		t.Errorf("decode attention: server %.6f ms, workstation %.6f ms", s, w)
	}
}
