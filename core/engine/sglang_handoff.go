package engine

// The SGLang core's side of disaggregation, with the Core's contract
// (handoff.go): a destination reserves pages for the whole prompt (its
// cached prefix locked in the tree), the prompt counts as materialized on
// Activate, and a holding source keeps its finished request's pages locked.

func sgID(id uint64) func(*sgReq) bool { return func(r *sgReq) bool { return r.id == id } }

// Reserve implements Rank.
func (c *SGLangCore) Reserve(q Request) (Reason, error) {
	r, err := c.initReq(q)
	if err != nil {
		return NotRejected, err
	}
	if (r.promptLen+c.page-1)/c.page > c.total {
		return KVCapacity, nil
	}
	r.fresh = false
	c.live++
	c.pending.pushBack(r)
	return NotRejected, nil
}

// grantReservations reserves pages for pending transfers in arrival order
// ahead of the pass's own work, stopping at the first that does not fit.
func (c *SGLangCore) grantReservations() {
	for c.pending.len() > 0 && (c.cfg.MaxSeqs == 0 || len(c.running)+len(c.reserved) < c.cfg.MaxSeqs) {
		r := c.pending.front()
		prefix, _, ok := c.allocPrefill(r, r.length)
		if !ok {
			return
		}
		c.pending.popFront()
		r.cachedPrefix = prefix
		c.reserved = append(c.reserved, r)
		resident := prefix / c.page
		c.pass.Reserved = append(c.pass.Reserved, Reservation{ID: r.id, Resident: prefix, Missing: missing(r.promptLen, resident, c.page)})
	}
}

// Activate implements Rank.
func (c *SGLangCore) Activate(id uint64) bool {
	r, ok := take(&c.reserved, sgID(id))
	if !ok {
		return false
	}
	r.materialized = r.length
	c.running = append(c.running, r)
	return true
}

// Release implements Rank.
func (c *SGLangCore) Release(id uint64) bool {
	r, ok := take(&c.holds, sgID(id))
	if !ok {
		return false
	}
	c.release(r, r.cached)
	return true
}

// Cancel implements Rank.
func (c *SGLangCore) Cancel(id uint64) bool {
	if r, ok := take(&c.reserved, sgID(id)); ok {
		c.release(r, 0)
		c.live--
		return true
	}
	for i, r := range c.pending.items() {
		if r.id == id {
			c.pending.remove(i)
			c.live--
			return true
		}
	}
	return false
}
