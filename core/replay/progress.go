package replay

import (
	"github.com/dynosim/dynosim-web/core/engine"
	"github.com/dynosim/dynosim-web/timing"
)

// progress is Options.Progress as an Observer: it counts terminals and,
// every progressEvery pass ends (the first included), tells the front end
// how far the run is. A false answer cancels the run: the loop stops at
// its next step with ErrCanceled.
type progress struct {
	NopObserver
	fn          func(simMs float64, done, total int) bool
	total, done int
	passes      int
	stopped     bool
}

// progressEvery passes between calls: often enough for a progress bar and
// for a wasm build's yields (sim.go), rare enough to cost nothing.
const progressEvery = 256

func (p *progress) PassEnded(_ int, pass *engine.Pass) {
	if p.passes%progressEvery == 0 && !p.stopped && !p.fn(pass.End.Ms(), p.done, p.total) {
		p.stopped = true
	}
	p.passes++
}

func (p *progress) Terminal(uint64, timing.Time, string) { p.done++ }
