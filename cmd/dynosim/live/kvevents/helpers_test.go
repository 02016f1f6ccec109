package kvevents

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/internal/patience"
	"github.com/dynosim/dynosim-web/kv"
	"github.com/vmihailenco/msgpack/v5"
)

// wireEvent is one event decoded from a payload, normalized across the
// named and positional forms.
type wireEvent struct {
	Type      string
	Hashes    []uint64
	Parent    any // nil or uint64
	Medium    string
	BlockSize int64
}

// wireBatch is a decoded payload [ts, events, dp_rank].
type wireBatch struct {
	TS     float64
	Events []wireEvent
	Rank   int64
}

// counts sums a batch's blocks the way Hub.Counts does.
func (b wireBatch) counts() (c Counts) {
	c.Batches = 1
	for _, ev := range b.Events {
		switch ev.Type {
		case typeStored:
			c.StoredBlocks += uint64(len(ev.Hashes))
		case typeRemoved:
			c.RemovedBlocks += uint64(len(ev.Hashes))
		case typeCleared:
			c.Cleared++
		}
	}
	return c
}

func (c *Counts) add(d Counts) {
	c.StoredBlocks += d.StoredBlocks
	c.RemovedBlocks += d.RemovedBlocks
	c.Cleared += d.Cleared
	c.Batches += d.Batches
}

// decodePayload decodes a payload with msgpack/v5 into generic values and
// checks its shape strictly: every field present, nothing extra, no
// trailing bytes.
func decodePayload(p []byte, positional bool) (wireBatch, error) {
	dec := msgpack.NewDecoder(bytes.NewReader(p))
	dec.UseLooseInterfaceDecoding(true)
	var v any
	if err := dec.Decode(&v); err != nil {
		return wireBatch{}, fmt.Errorf("decode: %w", err)
	}
	if _, err := dec.DecodeInterface(); !errors.Is(err, io.EOF) {
		return wireBatch{}, fmt.Errorf("trailing bytes after the batch (%v)", err)
	}
	top, ok := v.([]any)
	if !ok || len(top) != 3 {
		return wireBatch{}, fmt.Errorf("batch %#v: want [ts, events, dp_rank]", v)
	}
	var b wireBatch
	if b.TS, ok = top[0].(float64); !ok {
		return b, fmt.Errorf("ts %#v: want float64", top[0])
	}
	rank, err := asInt(top[2])
	if err != nil {
		return b, fmt.Errorf("dp_rank: %w", err)
	}
	b.Rank = rank
	events, ok := top[1].([]any)
	if !ok && top[1] != nil {
		return b, fmt.Errorf("events %#v: want an array", top[1])
	}
	for i, e := range events {
		var ev wireEvent
		if positional {
			ev, err = positionalEvent(e)
		} else {
			ev, err = namedEvent(e)
		}
		if err != nil {
			return b, fmt.Errorf("event %d: %w", i, err)
		}
		b.Events = append(b.Events, ev)
	}
	return b, nil
}

func namedEvent(e any) (wireEvent, error) {
	m, ok := e.(map[string]any)
	if !ok {
		return wireEvent{}, fmt.Errorf("%#v: want a map", e)
	}
	var ev wireEvent
	ev.Type, _ = m["type"].(string)
	var want []string
	switch ev.Type {
	case typeStored:
		want = []string{"block_hashes", "block_size", "group_idx", "lora_id", "lora_name", "medium", "parent_block_hash", "token_ids", "type"}
	case typeRemoved:
		want = []string{"block_hashes", "medium", "type"}
	case typeCleared:
		want = []string{"type"}
	default:
		return ev, fmt.Errorf("type %#v", m["type"])
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if !slices.Equal(keys, want) {
		return ev, fmt.Errorf("%s keys %v, want %v", ev.Type, keys, want)
	}
	if ev.Type == typeCleared {
		return ev, nil
	}
	var err error
	if ev.Hashes, err = asHashes(m["block_hashes"]); err != nil {
		return ev, err
	}
	if ev.Medium, ok = m["medium"].(string); !ok {
		return ev, fmt.Errorf("medium %#v", m["medium"])
	}
	if ev.Type == typeRemoved {
		return ev, nil
	}
	if m["lora_id"] != nil || m["lora_name"] != nil {
		return ev, fmt.Errorf("lora %#v %#v: want nil", m["lora_id"], m["lora_name"])
	}
	if g, err := asInt(m["group_idx"]); err != nil || g != 0 {
		return ev, fmt.Errorf("group_idx %#v: want 0", m["group_idx"])
	}
	return storedRest(ev, m["parent_block_hash"], m["token_ids"], m["block_size"])
}

func positionalEvent(e any) (wireEvent, error) {
	a, ok := e.([]any)
	if !ok || len(a) == 0 {
		return wireEvent{}, fmt.Errorf("%#v: want a tagged array", e)
	}
	var ev wireEvent
	ev.Type, _ = a[0].(string)
	want := map[string]int{typeStored: 7, typeRemoved: 3, typeCleared: 1}[ev.Type]
	if want == 0 || len(a) != want {
		return ev, fmt.Errorf("%#v: want %d fields", a, want)
	}
	if ev.Type == typeCleared {
		return ev, nil
	}
	var err error
	if ev.Hashes, err = asHashes(a[1]); err != nil {
		return ev, err
	}
	if ev.Medium, ok = a[len(a)-1].(string); !ok {
		return ev, fmt.Errorf("medium %#v", a[len(a)-1])
	}
	if ev.Type == typeRemoved {
		return ev, nil
	}
	if a[5] != nil {
		return ev, fmt.Errorf("lora_id %#v: want nil", a[5])
	}
	return storedRest(ev, a[2], a[3], a[4])
}

// storedRest checks and fills the BlockStored fields both forms share.
func storedRest(ev wireEvent, parent, tokens, size any) (wireEvent, error) {
	if parent != nil {
		p, err := asUint(parent)
		if err != nil {
			return ev, fmt.Errorf("parent_block_hash: %w", err)
		}
		ev.Parent = p
	}
	if t, ok := tokens.([]any); tokens != nil && (!ok || len(t) != 0) {
		return ev, fmt.Errorf("token_ids %#v: want []", tokens)
	}
	var err error
	ev.BlockSize, err = asInt(size)
	return ev, err
}

func asHashes(v any) ([]uint64, error) {
	a, ok := v.([]any)
	if !ok && v != nil {
		return nil, fmt.Errorf("block_hashes %#v: want an array", v)
	}
	out := make([]uint64, 0, len(a))
	for _, x := range a {
		h, err := asUint(x)
		if err != nil {
			return nil, fmt.Errorf("block hash: %w", err)
		}
		out = append(out, h)
	}
	return out, nil
}

func asUint(v any) (uint64, error) {
	switch x := v.(type) {
	case uint64:
		return x, nil
	case int64:
		if x >= 0 {
			return uint64(x), nil
		}
	}
	return 0, fmt.Errorf("%#v: want an unsigned integer", v)
}

func asInt(v any) (int64, error) {
	switch x := v.(type) {
	case int64:
		return x, nil
	case uint64:
		if x <= 1<<63-1 {
			return int64(x), nil
		}
	}
	return 0, fmt.Errorf("%#v: want an integer", v)
}

// stored and removed build events for the tests.
func stored(rank int, tier kv.Tier, parent *uint64, hashes ...uint64) kv.Event {
	ev := kv.Event{DPRank: rank, Kind: kv.Stored, Tier: tier}
	if parent != nil {
		ev.Parent, ev.HasParent = *parent, true
	}
	for _, h := range hashes {
		ev.Blocks = append(ev.Blocks, kv.StoredBlock{BlockHash: h, TokensHash: ^h})
	}
	return ev
}

func removed(rank int, tier kv.Tier, hashes ...uint64) kv.Event {
	return kv.Event{DPRank: rank, Kind: kv.Removed, Tier: tier, Removed: hashes}
}

func ptr(v uint64) *uint64 { return &v }

// hubGoroutines returns the stacks of goroutines running Hub code.
func hubGoroutines() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "kvevents.(*Hub).") {
			out = append(out, g)
		}
	}
	return out
}

// waitNoHubGoroutines waits until no Hub goroutine is left (see waitUntil).
func waitNoHubGoroutines(t *testing.T) {
	t.Helper()
	patience.Until(t, "hub goroutines end", func() (bool, string) {
		g := hubGoroutines()
		return len(g) == 0, fmt.Sprintf("%d hub goroutines still running:\n%s", len(g), strings.Join(g, "\n\n"))
	})
}
