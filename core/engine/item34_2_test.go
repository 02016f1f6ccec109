package engine

import (
	"reflect"
	"slices"
	"testing"

	"github.com/dynosim/dynosim-web/kv"
	"github.com/dynosim/dynosim-web/timing"
)

// promptHashes hashes prompt's full blocks as the KV router does
// (router.Indexer.HashesLocals), from kv's exported functions.
func promptHashes(prompt []uint32, bs int) (hashes, locals []uint64) {
	var s uint64
	for i := 0; i+bs <= len(prompt); i += bs {
		l := kv.LocalHash(prompt[i : i+bs])
		if i == 0 {
			s = l
		} else {
			s = kv.ChainHash(s, l)
		}
		hashes, locals = append(hashes, s), append(locals, l)
	}
	return hashes, locals
}

// TestItem34_2PromptHashes: a core handed the prompt's block hashes
// (Request.Hashes, Locals: the KV router's) runs pass for pass as one that
// hashes the prompt itself (signals, admissions, KV events with their
// hashes, end times), through prefix hits, partial trailing blocks,
// prompts shorter than a block, output blocks chained on the handed
// hashes and preemptions; hashes for another block size, of the wrong
// length or without locals are ignored.
func TestItem34_2PromptHashes(t *testing.T) {
	type variant struct {
		name string
		hand func(r *Request, bs int)
	}
	variants := []variant{
		{"handed", func(r *Request, bs int) { r.HashBlock = bs; r.Hashes, r.Locals = promptHashes(r.Prompt, bs) }},
		{"other_block_size", func(r *Request, bs int) {
			r.HashBlock = 2 * bs
			r.Hashes, r.Locals = promptHashes(r.Prompt, 2*bs)
			if n := len(r.Prompt) / bs; len(r.Hashes) == n { // would pass the length check
				r.Hashes, r.Locals = nil, nil
			}
		}},
		{"short", func(r *Request, bs int) {
			r.HashBlock = bs
			if h, l := promptHashes(r.Prompt, bs); len(h) > 0 {
				r.Hashes, r.Locals = h[:len(h)-1], l[:len(l)-1]
			}
		}},
		{"no_locals", func(r *Request, bs int) { r.HashBlock = bs; r.Hashes, _ = promptHashes(r.Prompt, bs) }},
	}
	cases := []struct {
		name string
		cfg  Config
	}{
		{"caching_events", cfg4(64, 0, 0, true)},
		{"tight_pool_preempts", cfg4(14, 0, 0, true)},
		{"no_caching", cfg4(64, 0, 0, false)},
		{"block16", func() Config { c := cfg4(48, 0, 0, true); c.BlockSize = 16; return c }()},
	}
	for _, tc := range cases {
		run := func(hand func(*Request, int)) []Pass {
			c := mustCore(t, tc.cfg)
			var passes []Pass
			now := timing.Time(0)
			for i := 0; i < 300; i++ {
				if i%23 == 0 && i < 230 {
					id := uint64(i/23 + 1)
					// Shared prefixes (ids 1..3 repeat), runs of one token
					// (trace-like), partial blocks and a prompt shorter
					// than a block.
					prompt := slices.Repeat([]uint32{uint32(id % 3)}, 3*tc.cfg.BlockSize)
					prompt = append(prompt, span(uint32(id*100), uint32(id*100)+uint32(1+5*id))...)
					if id == 4 {
						prompt = prompt[:tc.cfg.BlockSize-1]
					}
					r := Request{ID: id, Prompt: prompt, MaxOutput: 6 + int(5*id)}
					if hand != nil {
						hand(&r, tc.cfg.BlockSize)
					}
					if err := c.Submit(r); err != nil {
						t.Fatal(err)
					}
				}
				p := c.Step(now)
				q := clonePass(p)
				q.Events = slices.Clone(p.Events)
				passes = append(passes, q)
				now = max(p.End, now+timing.FromMs(1))
			}
			return passes
		}
		want := run(nil)
		for _, v := range variants {
			got := run(v.hand)
			for i := range want {
				if !reflect.DeepEqual(want[i], got[i]) {
					t.Fatalf("%s %s: pass %d differs:\nhashing %+v\nhanded  %+v", tc.name, v.name, i, want[i], got[i])
				}
			}
		}
	}
}

// TestItem34_2HashedSeq: the sequence state a handed prompt leaves (block
// hashes, local hashes, the hasher's pending tokens and chain) is the one
// hashing leaves, so later output blocks chain the same way.
func TestItem34_2HashedSeq(t *testing.T) {
	for _, bs := range []int{1, 4, 16} {
		for _, n := range []int{0, 1, bs - 1, bs, bs + 1, 5*bs - 1, 5 * bs, 7*bs + 3} {
			prompt := make([]uint32, n)
			for i := range prompt {
				prompt[i] = uint32(i / 3)
			}
			m := &blockMem{bs: bs, caching: true}
			mk := func(r *Request) *seq {
				s := &seq{blockPart: blockPart{hasher: kv.Hasher{BlockSize: bs}}}
				s.promptLen, s.maxOutput = n, 2*bs
				m.index(s, r)
				for tok := range uint32(2 * bs) {
					m.grow(s, 1000+tok)
				}
				return s
			}
			a := mk(&Request{Prompt: prompt})
			h, l := promptHashes(prompt, bs)
			b := mk(&Request{Prompt: prompt, HashBlock: bs, Hashes: h, Locals: l})
			if !slices.Equal(a.hashes, b.hashes) || !slices.Equal(a.locals, b.locals) || !slices.Equal(a.hasher.Pending(), b.hasher.Pending()) {
				t.Fatalf("bs %d, prompt %d: hashing %v %v %v, handed %v %v %v", bs, n, a.hashes, a.locals, a.hasher.Pending(), b.hashes, b.locals, b.hasher.Pending())
			}
		}
	}
}
