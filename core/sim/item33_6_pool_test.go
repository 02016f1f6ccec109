package sim

import (
	"testing"

	"github.com/dynosim/dynosim-web/core/config"
	"github.com/dynosim/dynosim-web/core/engine"
	"github.com/dynosim/dynosim-web/timing"
)

// TestItem33_6SGLangDefaultPool: under engine.semantics real an SGLang
// worker without memory_fraction sizes its pool at SGLang's default
// mem_fraction_static with only the non-torch reserve; an explicit
// fraction is used as written (same reserve); mocker and vLLM keep
// memory_fraction 0.9 with the 2 GiB reserve.
func TestItem33_6SGLangDefaultPool(t *testing.T) {
	roof, err := timing.NewRoofline(timing.RooflineSpec{Model: "qwen3-32b", Hardware: "h100_sxm"})
	if err != nil {
		t.Fatal(err)
	}
	old, _ := roof.EstimateBlocks(0.9, 1, 0)
	for _, tc := range []struct {
		name string
		sets []string
		want func() (int, error)
	}{
		{"sglang real default", []string{"engine.backend=sglang"},
			func() (int, error) { return roof.EstimateBlocksReserve(0.835, 1, timing.SGLangNonTorchBytes) }},
		{"sglang real explicit", []string{"engine.backend=sglang", "engine.workers.aggregated.kv_cache.capacity.memory_fraction=0.9"},
			func() (int, error) { return roof.EstimateBlocksReserve(0.9, 1, timing.SGLangNonTorchBytes) }},
		{"sglang mocker", []string{"engine.backend=sglang", "engine.semantics=mocker"}, func() (int, error) { return old, nil }},
		{"vllm", nil, func() (int, error) { return old, nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.Parse("t", []byte("engine: {model: qwen3-32b, hardware: h100_sxm}"), tc.sets)
			if err != nil {
				t.Fatal(err)
			}
			ec := &engine.Config{BlockSize: 1}
			role := &cfg.Engine.Workers.Aggregated
			if err := sizePool("p", role, roof, nil, ec, sglangPool(&cfg)); err != nil {
				t.Fatal(err)
			}
			want, err := tc.want()
			if err != nil {
				t.Fatal(err)
			}
			if ec.NumBlocks != want {
				t.Fatalf("%d tokens, want %d", ec.NumBlocks, want)
			}
		})
	}
}
