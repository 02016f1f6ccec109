// Package kv models the KV cache of a simulated engine: token-block hashing,
// the native physical block pool with its prefix cache and LRU eviction, and
// the router-visible KV events it emits. It knows nothing of engines.
package kv

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"unsafe"

	"github.com/zeebo/xxh3"
)

// Seed is the XXH3 seed of block hashes (the reference's MOCKER_SALT_HASH,
// also the router's default salt), so our hashes equal the reference's.
const Seed = 1337

// LocalHash is the hash of one block's tokens, serialized as little-endian
// uint32s.
func LocalHash(tokens []uint32) uint64 {
	if littleEndian && len(tokens) > 0 {
		// The in-memory form already is the wire form: hash it in place.
		return xxh3.HashSeed(unsafe.Slice((*byte)(unsafe.Pointer(&tokens[0])), 4*len(tokens)), Seed)
	}
	var stack [256]byte
	var buf []byte
	if n := 4 * len(tokens); n <= len(stack) {
		buf = stack[:n]
	} else {
		buf = make([]byte, n)
	}
	for i, t := range tokens {
		binary.LittleEndian.PutUint32(buf[4*i:], t)
	}
	return xxh3.HashSeed(buf, Seed)
}

// RunMemo remembers the local hash of the last block that was one token
// repeated. A trace prompt is each trace block's id repeated over the trace
// block (core/workload Prompt), so with 512-token trace blocks and 64-token
// KV blocks seven of eight blocks repeat the previous block's tokens
// exactly; comparing a block with itself shifted by one token (memequal)
// costs a few dozen instructions against hashing its bytes (issue 34 item 1:
// prompt hashing was 14 % of the default-timing replay). The memo holds a
// pure function's value, so it changes no hash (TestItem34_1RunMemo).
type RunMemo struct {
	tok  uint32
	n    int // tokens in the block; 0: empty
	hash uint64
}

// Local returns LocalHash(block).
func (m *RunMemo) Local(block []uint32) uint64 {
	n := len(block)
	if n < 2 || block[0] != block[n-1] || !isRun(block) {
		return LocalHash(block)
	}
	if m.n != n || m.tok != block[0] {
		m.tok, m.n, m.hash = block[0], n, LocalHash(block)
	}
	return m.hash
}

// isRun reports whether block (at least two tokens) is one token repeated:
// then and only then it equals itself shifted by one token.
func isRun(block []uint32) bool {
	b := unsafe.Slice((*byte)(unsafe.Pointer(&block[0])), 4*len(block))
	return bytes.Equal(b[4:], b[:len(b)-4])
}

// ChainHash is the sequence hash of a block: its parent's sequence hash and
// its own local hash, hashed together. The first block's sequence hash is its
// local hash.
//
// It is XXH3-64 with seed Seed of the 16 little-endian bytes parent, local,
// written out: XXH3's 9-to-16-byte path (XXH3_len_9to16_64b in the
// reference xxhash.h; github.com/zeebo/xxh3 hashAnySeed's l > 8 case) on
// the default secret's words 24..55. Going through xxh3.HashSeed cost
// ~110 instructions per block (length dispatch, byte loads) for ~20 here,
// once per block of every prompt in the engines and the KV router (issue
// 34 item 1). TestItem34_1ChainHash checks it against xxh3.HashSeed.
func ChainHash(parent, local uint64) uint64 {
	lo := parent ^ (chainKey024 ^ chainKey032 + Seed)
	hi := local ^ (chainKey040 ^ chainKey048 - Seed)
	mh, ml := bits.Mul64(lo, hi)
	acc := 16 + bits.ReverseBytes64(lo) + hi + (mh ^ ml)
	// XXH3_avalanche
	acc ^= acc >> 37
	acc *= 0x165667919e3779f9
	return acc ^ acc>>32
}

// The default XXH3 secret's little-endian 64-bit words at byte offsets
// 24, 32, 40 and 48 (kSecret in xxhash.h; zeebo/xxh3 key64_024..048).
const (
	chainKey024 uint64 = 0x1f67b3b7a4a44072
	chainKey032 uint64 = 0x78e5c0cc4ee679cb
	chainKey040 uint64 = 0x2172ffcc7dd05a82
	chainKey048 uint64 = 0x8e2443f7744608b8
)

// Hasher accumulates tokens and yields the local and sequence hash of every
// block as it fills. Only full blocks are hashed.
type Hasher struct {
	BlockSize int
	pending   []uint32 // tokens of the current partial block
	last      uint64   // sequence hash of the last full block
	blocks    int
	runs      RunMemo
}

// Add appends tokens, calling emit for each block that becomes full.
func (h *Hasher) Add(tokens []uint32, emit func(local, seq uint64)) {
	for len(tokens) > 0 {
		if len(h.pending) == 0 && len(tokens) >= h.BlockSize {
			// Fast path: hash a whole block straight from the input.
			h.full(tokens[:h.BlockSize], emit)
			tokens = tokens[h.BlockSize:]
			continue
		}
		n := min(h.BlockSize-len(h.pending), len(tokens))
		h.pending = append(h.pending, tokens[:n]...)
		tokens = tokens[n:]
		if len(h.pending) == h.BlockSize {
			h.full(h.pending, emit)
			h.pending = h.pending[:0]
		}
	}
}

// AddOne appends a single token.
func (h *Hasher) AddOne(t uint32, emit func(local, seq uint64)) {
	h.pending = append(h.pending, t)
	if len(h.pending) == h.BlockSize {
		h.full(h.pending, emit)
		h.pending = h.pending[:0]
	}
}

func (h *Hasher) full(block []uint32, emit func(local, seq uint64)) {
	l := h.runs.Local(block)
	s := l
	if h.blocks > 0 {
		s = ChainHash(h.last, l)
	}
	h.last = s
	h.blocks++
	emit(l, s)
}

// Skip records the first blocks full blocks of a sequence whose hashes the
// caller already has (last: the last one's sequence hash) as if their
// tokens had been added, so the next full block chains on last. It applies
// only to an empty hasher (new or Reset) and reports whether it did.
func (h *Hasher) Skip(blocks int, last uint64) bool {
	if h.blocks != 0 || len(h.pending) != 0 || blocks <= 0 {
		return false
	}
	h.blocks, h.last = blocks, last
	return true
}

// Pending returns the tokens of the current partial block.
func (h *Hasher) Pending() []uint32 { return h.pending }

var littleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// Reset empties the hasher for a new sequence, keeping its buffer.
func (h *Hasher) Reset() {
	h.pending, h.last, h.blocks = h.pending[:0], 0, 0
}
