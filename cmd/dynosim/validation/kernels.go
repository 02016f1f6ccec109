package validation

import (
	"fmt"

	"github.com/dynosim/dynosim-web/core/sim"
	"github.com/dynosim/dynosim-web/timing/kernels/kerneldata"
)

// kernelsMode is the `timing.kernels` every `timing.type: default` replay
// of the harness is priced with (`dynosim validate --kernels`): "default",
// the default timing every figure of docs/validation.md comes from
// (AIConfigurator's measured kernel tables, timing/kernels, wherever AIC
// measured the replay's GPU under its engine; the fitted curves
// elsewhere), "curves" (the fitted curves only) or "aic" (the tables, a
// replay AIC did not measure refused). Set it before Generate; the
// replays only read it.
var kernelsMode = "default"

// SetKernels chooses the kernel timing of the replays: default, curves or aic.
func SetKernels(k string) error {
	if k != "default" && k != "curves" && k != "aic" {
		return fmt.Errorf("want default, curves or aic, got %q", k)
	}
	kernelsMode = k
	return nil
}

// Kernels is the kernel timing the replays use.
func Kernels() string { return kernelsMode }

// withKernels is in priced as kernelsMode says, with the CLI's embedded
// tables: each role of the harness's configs (all aggregated, all
// timing.type: default) gets `timing.kernels: curves` or `aic` unless the
// mode is the default. Under aic a replay whose GPU or engine AIC did not
// measure (none of today's sources) is refused by the key's own check and
// counts as that point's error: it is never priced on the curves under a
// report that says aic.
func withKernels(in sim.Inputs) sim.Inputs {
	in.KernelTable = kerneldata.Load
	if kernelsMode != "default" {
		in.Sets = append(in.Sets[:len(in.Sets):len(in.Sets)], "engine.workers.aggregated.timing.kernels="+kernelsMode)
	}
	return in
}
