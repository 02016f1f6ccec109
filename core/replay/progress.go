package replay

import "github.com/dynosim/dynosim-web/timing"

// progress is Options.Progress as an Observer: it counts terminals, and
// the loop asks it every progressEvery steps to tell the front end how
// far the run is (poll). It hears no pass or token fact, so it costs the
// hot path nothing.
type progress struct {
	NopObserver
	fn          func(simMs float64, done, total int) bool
	total, done int
	steps       int
}

// progressEvery loop steps between calls: often enough for a progress bar
// and for a wasm build's yields (sim.go), rare enough to cost nothing.
const progressEvery = 256

func (p *progress) Terminal(uint64, timing.Time, string) { p.done++ }

// poll calls the front end every progressEvery steps (the first included)
// and reports whether it asked to stop.
// It inlines: the loop pays a counter between calls.
func (p *progress) poll(now timing.Time) (stop bool) {
	k := p.steps
	p.steps++
	return k%progressEvery == 0 && p.stop(now)
}

//go:noinline
func (p *progress) stop(now timing.Time) bool { return !p.fn(now.Ms(), p.done, p.total) }
