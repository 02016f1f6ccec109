package engine

import (
	"github.com/dynosim/dynosim-web/kv"
	"github.com/dynosim/dynosim-web/kv/tiers"
)

// blockMem is the request book's memory under the vLLM/TensorRT-LLM core:
// the kv package's block manager, with a lease per request.
type blockMem struct {
	kv      *kv.Manager
	bs      int
	caching bool
	bursts  bool         // speculative bursts reserve room that settle gives back
	tier    *tiers.Layer // the lower tiers around the pool; nil without
}

func (m *blockMem) index(s *seq, r *Request) {
	if !m.caching {
		return
	}
	// Room for every block the request can fill: no regrowth later.
	if n := (s.promptLen+s.maxOutput)/m.bs + 1; cap(s.hashes) < n {
		s.hashes, s.locals = make([]uint64, 0, n), make([]uint64, 0, n)
	}
	prompt := r.Prompt
	if n := len(prompt) / m.bs; r.HashBlock == m.bs && n > 0 && len(r.Hashes) == n && len(r.Locals) == n &&
		s.hasher.BlockSize == m.bs && s.hasher.Skip(n, r.Hashes[n-1]) {
		// The caller's hashes of the full blocks (Request.Hashes): only
		// the trailing partial block is left to the hasher.
		s.hashes = append(s.hashes, r.Hashes...)
		s.locals = append(s.locals, r.Locals...)
		prompt = prompt[n*m.bs:]
	}
	s.hasher.Add(prompt, s.addHash)
}

func (s *seq) addHash(local, sh uint64) {
	s.hashes = append(s.hashes, sh)
	s.locals = append(s.locals, local)
}

func (m *blockMem) reservePrompt(s *seq) (int, bool) {
	overlap, active := m.kv.Match(s.hashes)
	if s.knownBlocks(m.bs)-active > m.kv.Pool.Capacity()-m.kv.Pool.Active() ||
		!m.kv.Allocate(&s.lease, s.promptLen, overlap, s.hashes) {
		return 0, false
	}
	return overlap * m.bs, true
}

func (m *blockMem) fillPrompt(s *seq) {
	m.kv.Finalize(&s.lease, 0, s.promptLen, s.hashes, s.locals)
}

func (m *blockMem) grow(s *seq, tok uint32) {
	if m.caching {
		s.hasher.AddOne(tok, s.addHash)
	}
}

func (m *blockMem) settle(s *seq, before int, done bool) {
	if !done && m.bursts {
		m.settleBurst(s, before)
	}
}

// settleBurst closes a speculative burst.
func (m *blockMem) settleBurst(s *seq, before int) {
	// All but the last accepted token now have KV; the last one dangles
	// as in plain decoding. Unused reserved blocks go back.
	s.computed = s.length - 1
	m.kv.Finalize(&s.lease, before, s.computed, s.hashes, s.locals)
	m.kv.Truncate(&s.lease, (s.computed+m.bs-1)/m.bs)
}

// keep has nothing to do: computed blocks were finalized as they filled.
func (m *blockMem) keep(*seq) {}

func (m *blockMem) drop(s *seq) { m.kv.Release(&s.lease) }
