package validation

import (
	"fmt"

	"github.com/dynosim/dynosim-web/core/sim"
	"github.com/dynosim/dynosim-web/timing/kernels/kerneldata"
)

// kernelsMode is the `timing.kernels` every `timing.type: default` replay
// of the harness is priced with (`dynosim validate --kernels`): "curves",
// the fitted curves every figure of docs/validation.md comes from, or
// "aic", AIConfigurator's measured kernel tables (timing/kernels, issue 33
// item 3) wherever AIC measured the replay's GPU under its engine. Set it
// before Generate; the replays only read it.
var kernelsMode = "curves"

// SetKernels chooses the kernel timing of the replays: curves or aic.
func SetKernels(k string) error {
	if k != "curves" && k != "aic" {
		return fmt.Errorf("want curves or aic, got %q", k)
	}
	kernelsMode = k
	return nil
}

// Kernels is the kernel timing the replays use.
func Kernels() string { return kernelsMode }

// withKernels is in priced as kernelsMode says: under aic, each role of
// the harness's configs (all aggregated, all timing.type: default) gets
// `timing.kernels: aic` and the CLI's embedded tables. A replay whose GPU
// or engine AIC did not measure (none of today's sources) is refused by
// the key's own check and counts as that point's error: it is never priced
// on the curves under a report that says aic.
func withKernels(in sim.Inputs) sim.Inputs {
	if kernelsMode != "aic" {
		return in
	}
	in.Sets = append(in.Sets[:len(in.Sets):len(in.Sets)], "engine.workers.aggregated.timing.kernels=aic")
	in.KernelTable = kerneldata.Load
	return in
}
