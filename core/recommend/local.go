package recommend

import (
	"github.com/dynosim/dynosim-web/core/report"
	"github.com/dynosim/dynosim-web/core/sim"
)

// Local evaluates candidates with the simulator in this process, each run
// on fresh engines over one prepared workload (sim.PrepareSweep).
type Local struct{ P *sim.Prepared }

// Predict implements Evaluator.
func (l Local) Predict(sets []string) (*report.Report, string, error) {
	rep, err := l.P.Run(sets, nil)
	if err != nil {
		return nil, Category(err), err
	}
	return rep, "", nil
}
