package kv

import "math/bits"

// Quiet reports whether computing one more token of lease l, from before
// computed tokens, asks nothing of the manager: no claim to give back, the
// token's block already held and not filled by it, and nothing left to
// finalize, so Allocate(l, before+1, …) and Finalize(l, before, before+1,
// …) would change nothing. The engine's steady decode passes skip both
// calls then (issue 34 item 1): one token per request per pass.
func (m *Manager) Quiet(l *Lease, before int) bool {
	// One integer division, not three: with a remainder, ⌈after/bs⌉ is q+1;
	// and a shift for a power-of-two block size, the common case (a 64-bit
	// division is dear, and this runs per request per pass).
	after, bs := before+1, m.BlockSize
	var q int
	if bs&(bs-1) == 0 {
		q = after >> bits.TrailingZeros(uint(bs))
	} else {
		q = after / bs
	}
	return l.claim == 0 && after != q*m.BlockSize && q < len(l.Slots) && (!m.Caching || l.finalized >= q)
}
