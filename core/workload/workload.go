// Package workload turns traces and synthetic specs into sessions of
// requests: Mooncake JSONL and Azure CSV readers, the flat synthetic
// generator, and prompt-token synthesis. Traces are kept compactly (interned
// hash-block ids, not tokens); prompts are materialised one request at a time
// when the replay dispatches it, so memory follows the trace's compact size.
package workload

import (
	"fmt"
	"slices"

	"github.com/dynosim/dynosim-web/timing"
)

// Turn is one request of a session.
type Turn struct {
	Input   int      // prompt tokens
	Output  int      // requested output tokens
	Blocks  []uint32 // interned hash-block ids (trace); nil: unique synthetic tokens
	Planned []uint32 // optional exact output tokens
	Delay   timing.Time
	// Priority is the trace's priority (Mooncake/Dynamo `priority`, i32,
	// default 0). vLLM's priority scheduler runs lower values first;
	// Dynamo's router queue reads max(priority, 0) as a jump ahead (spec
	// §1.1, §10.11). StrictPriority is Dynamo's `strict_priority` (u32):
	// the router queue pops larger values first.
	Priority       int32
	StrictPriority uint32
	ord            uint64 // workload-wide ordinal, for unique synthetic tokens
}

// Session is a sequence of turns: turn n+1 becomes ready Delay after turn n
// completes.
type Session struct {
	Start timing.Time // arrival of the first turn (trace timestamps)
	Turns []Turn
}

// Workload is a loaded set of sessions.
type Workload struct {
	Name       string // file name, for messages
	Sessions   []Session
	TraceBlock int  // tokens per trace hash block
	Timestamps bool // sessions carry arrival times
	// ByStart lists session indices by first arrival (file order breaks
	// ties); Sessions themselves stay in file order.
	ByStart []int32
	// Priorities counts the turns whose trace sets a non-zero priority,
	// Stricts those with a non-zero strict_priority and Classes those
	// with a policy_class: what a report must say it did not model when
	// the configuration ignores them.
	Priorities, Stricts, Classes int
	ids                          int // interned hash ids in use
}

// Requests counts all turns.
func (w *Workload) Requests() int {
	n := 0
	for i := range w.Sessions {
		n += len(w.Sessions[i].Turns)
	}
	return n
}

// Prompt appends the prompt tokens of t to dst. Trace prompts repeat each
// interned block id for one trace block, so equal id prefixes become equal
// token prefixes; synthetic prompts are unique per request.
func (w *Workload) Prompt(dst []uint32, t *Turn) []uint32 {
	if t.Blocks == nil {
		for j := range t.Input {
			dst = append(dst, SynthToken(t.ord, uint64(j)))
		}
		return dst
	}
	left := t.Input
	dst = slices.Grow(dst, left)
	for _, id := range t.Blocks {
		n := min(w.TraceBlock, left)
		// The block's copies by doubling copies: a prompt is long (a
		// replay builds every one) and one append per token cost more
		// than the rest of placing it (issue 34 item 1).
		if n > 0 {
			k := len(dst)
			dst = dst[:k+n]
			b := dst[k:]
			b[0] = id
			for f := 1; f < n; f *= 2 {
				copy(b[f:], b[:f])
			}
		}
		left -= n
		if left == 0 {
			break
		}
	}
	return dst
}

// RunLen is the length of the runs Prompt(t) is made of: its tokens are
// equal within each aligned run [k·RunLen, (k+1)·RunLen) (a trace prompt
// repeats each block id over a trace block); 0 when they need not be
// (synthetic prompts). A hasher can then take a KV block inside one run
// for one token repeated without comparing its tokens (router.Request
// RunLen, issue 34 item 2).
func (w *Workload) RunLen(t *Turn) int {
	if t.Blocks == nil {
		return 0
	}
	return w.TraceBlock
}

// SynthToken is token j of synthetic request i: a SplitMix64 finalizer of
// (i<<32) XOR j truncated to 32 bits, with 0 mapped to 1 (spec §8.3).
func SynthToken(i, j uint64) uint32 {
	z := (i<<32 ^ j) + 0x9E3779B97F4A7C15
	z = (z ^ z>>30) * 0xBF58476D1CE4E5B9
	z = (z ^ z>>27) * 0x94D049BB133111EB
	z ^= z >> 31
	if t := uint32(z); t != 0 {
		return t
	}
	return 1
}

// Synthetic returns n single-turn requests of in prompt and out output
// tokens with unique prompts (no shared prefix).
func Synthetic(n, in, out int) (*Workload, error) {
	switch {
	case n < 1:
		return nil, fmt.Errorf("traffic.stop.requests: must be ≥ 1, got %d", n)
	case in < 1:
		return nil, fmt.Errorf("traffic.source.input_tokens: must be ≥ 1, got %d", in)
	case out < 0:
		return nil, fmt.Errorf("traffic.source.output_tokens: must be ≥ 0, got %d", out)
	}
	w := &Workload{Name: "synthetic", Sessions: make([]Session, n)}
	for i := range w.Sessions {
		w.Sessions[i].Turns = []Turn{{Input: in, Output: out, ord: uint64(i)}}
	}
	w.order()
	return w, nil
}

// number assigns ordinals in session order.
func (w *Workload) number() {
	var k uint64
	for i := range w.Sessions {
		for j := range w.Sessions[i].Turns {
			w.Sessions[i].Turns[j].ord = k
			k++
		}
	}
}

// Merge appends the sessions of o (another file of the same trace set,
// its times normalized on their own).
func (w *Workload) Merge(o *Workload) error {
	if w.TraceBlock != o.TraceBlock && w.TraceBlock != 0 && o.TraceBlock != 0 {
		return fmt.Errorf("%s: trace block size %d differs from %s's %d", o.Name, o.TraceBlock, w.Name, w.TraceBlock)
	}
	if o.TraceBlock != 0 {
		w.TraceBlock = o.TraceBlock
	}
	// Interned ids are per file: shift o's past ours so files never share blocks.
	for i := range o.Sessions {
		for j := range o.Sessions[i].Turns {
			for k := range o.Sessions[i].Turns[j].Blocks {
				o.Sessions[i].Turns[j].Blocks[k] += uint32(w.ids)
			}
		}
	}
	w.ids += o.ids
	w.Priorities += o.Priorities
	w.Stricts += o.Stricts
	w.Classes += o.Classes
	w.Sessions = append(w.Sessions, o.Sessions...)
	w.order()
	w.number()
	return nil
}
