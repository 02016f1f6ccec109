package live

import "github.com/dynosim/dynosim-web/kv"

// blockTokens gives a BlockStored event its token_ids (issue 31 item 3).
// The engine keeps a block's hashes, not its tokens, and offline replay
// must not pay for keeping them; so the live driver mirrors the engine's
// hashing of each request's tokens (prompt, then every generated token,
// through a kv.Hasher of its own) and remembers the
// tokens of every full block under its sequence hash, for as long as a
// request in flight has that block or some worker's published events say
// it holds it. vLLM's and Dynamo's routers, and llm-d's indexer, hash the
// token_ids of a BlockStored event themselves.
type blockTokens struct {
	bs int
	m  map[uint64]*tokenEntry
}

type tokenEntry struct {
	toks []uint32
	refs int // requests in flight with the block + Stored minus Removed events
}

func newBlockTokens(blockSize int) *blockTokens {
	return &blockTokens{bs: blockSize, m: map[uint64]*tokenEntry{}}
}

// seqHashes is one request's mirror of the engine's hasher.
type seqHashes struct {
	h      kv.Hasher // the engine's rule: its pending tokens are the trailing partial block
	blocks []uint64  // the sequence hash of every full block (a reference each)
}

// add appends tokens to q, referencing every block they fill.
func (t *blockTokens) add(q *seqHashes, tokens ...uint32) {
	if t == nil || t.bs <= 0 {
		return
	}
	q.h.BlockSize = t.bs
	// AddOne emits before it clears the full block, so Pending is its tokens.
	full := func(_, h uint64) {
		q.blocks = append(q.blocks, h)
		e := t.m[h]
		if e == nil {
			e = &tokenEntry{toks: append([]uint32(nil), q.h.Pending()...)}
			t.m[h] = e
		}
		e.refs++
	}
	for _, tok := range tokens {
		q.h.AddOne(tok, full)
	}
}

// release drops q's references (its request ended).
func (t *blockTokens) release(q *seqHashes) {
	if t == nil {
		return
	}
	for _, h := range q.blocks {
		t.unref(h)
	}
	q.blocks, q.h = nil, kv.Hasher{}
}

func (t *blockTokens) unref(h uint64) {
	if e := t.m[h]; e != nil {
		if e.refs--; e.refs <= 0 {
			delete(t.m, h)
		}
	}
}

// tokens is the token ids of the block with sequence hash h, nil if
// unknown. The kvevents encoder calls it while the driver publishes.
func (t *blockTokens) tokens(h uint64) []uint32 {
	if e := t.m[h]; e != nil {
		return e.toks
	}
	return nil
}

// published counts what a pass's events say the workers now hold: every
// Stored block is a reference, every Removed one drops one. Stores first,
// so a block that moves between tiers in one pass keeps its tokens.
func (t *blockTokens) published(events []kv.Event) {
	if t == nil {
		return
	}
	for i := range events {
		if ev := &events[i]; ev.Kind == kv.Stored {
			for _, b := range ev.Blocks {
				if e := t.m[b.BlockHash]; e != nil {
					e.refs++
				}
			}
		}
	}
	for i := range events {
		if ev := &events[i]; ev.Kind == kv.Removed {
			for _, h := range ev.Removed {
				t.unref(h)
			}
		}
	}
}
