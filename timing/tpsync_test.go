package timing

import (
	"math"
	"testing"
)

// TestItem33_4TPSync: the sync term is PerLog2Us · log2(tp) µs per
// collective, nothing at TP1, PCIe with P2P's for an unknown fabric; the
// roofline pays it on each of a layer's two all-reduces in every pass.
func TestItem33_4TPSync(t *testing.T) {
	for _, c := range []struct {
		f      Fabric
		tp     int
		wantUs float64
	}{
		{FabricNVLink4, 1, 0},
		{FabricNVLink4, 2, 2.0},
		{FabricNVLink4, 8, 6.0},
		{FabricNVLink5, 4, 1.0},
		{FabricNVLink3, 2, 2.0},
		{FabricPCIeP2P, 2, 2.0},
		{FabricPCIeNoP2P, 4, 4.0},
		{Fabric(200), 2, 2.0},
	} {
		if got := 1000 * TPSyncMs(c.f, c.tp); math.Abs(got-c.wantUs) > 1e-9 {
			t.Errorf("%s TP%d: %.3f µs, want %.3f", c.f, c.tp, got, c.wantUs)
		}
	}
	for _, c := range []struct {
		gpu string
		tp  int
	}{{"h100_sxm", 8}, {"b200", 2}, {"l40s", 2}, {"h100_sxm", 1}} {
		build := func() *Roofline {
			r, err := NewRoofline(RooflineSpec{Model: "llama-3.1-70b", Hardware: c.gpu, DType: "fp8", Parallelism: Parallelism{Tensor: c.tp}})
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		passes := func(r *Roofline) [3]float64 {
			return [3]float64{r.DecodeMs(32, 32*2048, 2048, 0), r.PrefillMs(1, 2048, 0), r.MixedMs(1, 512, 0, 16, 16*1024, 1024, 0)}
		}
		r := build()
		with := passes(r)
		old := SetTPSync(r.GPU.Fabric, TPSync{}) // read when a Roofline is built
		without := passes(build())
		SetTPSync(r.GPU.Fabric, old)
		if again := passes(r); again != with {
			t.Errorf("%s TP%d: a Roofline built before SetTPSync changed its prices: %v, then %v", c.gpu, c.tp, with, again)
		}
		want := 2 * float64(r.Model.Layers) * TPSyncMs(r.GPU.Fabric, c.tp)
		for i, pass := range []string{"decode", "prefill", "mixed"} {
			if d := with[i] - without[i]; math.Abs(d-want) > 1e-9 {
				t.Errorf("%s TP%d %s: the term adds %.4f ms, want 2 × layers × TPSyncMs = %.4f", c.gpu, c.tp, pass, d, want)
			}
		}
	}
}
