package router

import "math/bits"

// runPool keeps unused hash buffers by power-of-two size class, so a copy
// of a run reuses one large enough instead of allocating (issue 34 item 2,
// R4: the active tree's new segments and the active sequences' hash
// slices were 15.6 and 15.1 MB a replay of the whole Mooncake trace, fresh
// memory streamed through the cache). Class k holds capacities in
// [2^k, 2^(k+1)).
type runPool struct {
	bufs [40][][]uint64
}

// put keeps b's array for a later copy; the caller no longer uses it.
func (p *runPool) put(b []uint64) {
	if c := cap(b); c > 0 {
		k := min(bits.Len(uint(c))-1, len(p.bufs)-1)
		p.bufs[k] = append(p.bufs[k], b[:0])
	}
}

// copy returns a copy of run, in a kept buffer of the smallest class at
// hand that holds it (up to 4× its length), else in a new one of a
// power-of-two capacity; nil for an empty run.
func (p *runPool) copy(run []uint64) []uint64 {
	if len(run) == 0 {
		return nil
	}
	return append(p.get(len(run)), run...)
}

// get returns an empty buffer of capacity at least n ≥ 1: a kept one of
// the smallest class at hand that holds n (up to 4× n), else a new one
// of a power-of-two capacity.
func (p *runPool) get(n int) []uint64 {
	k := bits.Len(uint(n - 1)) // the smallest class whose buffers all hold n
	if k > 0 {
		if m := len(p.bufs[k-1]); m > 0 && cap(p.bufs[k-1][m-1]) >= n {
			k--
		}
	}
	for c := k; c < min(k+3, len(p.bufs)); c++ {
		if m := len(p.bufs[c]); m > 0 {
			buf := p.bufs[c][m-1]
			p.bufs[c] = p.bufs[c][:m-1]
			return buf
		}
	}
	return make([]uint64, 0, 1<<bits.Len(uint(n-1)))
}
