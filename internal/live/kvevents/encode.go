package kvevents

import (
	"encoding/binary"
	"math"
	"strconv"

	"github.com/dynosim/dynosim-web/kv"
)

// Event type names, shared by the msgpack tag and the JSON "type" field.
const (
	typeStored  = "BlockStored"
	typeRemoved = "BlockRemoved"
	typeCleared = "AllBlocksCleared"
)

// medium names the tier as vLLM's "medium" field does. vLLM itself only emits
// "GPU" and "CPU"; the lower KVBM tiers get names of their own so that a
// consumer can tell them apart instead of mistaking them for host memory.
func medium(t kv.Tier) string {
	switch t {
	case kv.Device:
		return "GPU"
	case kv.HostPinned:
		return "CPU"
	case kv.Disk:
		return "DISK"
	case kv.Object:
		return "OBJECT"
	}
	return "GPU"
}

// encodable reports whether ev is of a kind the wire format has a name for;
// other kinds (the zero EventKind) are skipped rather than guessed at.
func encodable(ev *kv.Event) bool { return ev.Kind == kv.Stored || ev.Kind == kv.Removed }

// rankEvents counts the encodable events of rank in events.
func rankEvents(events []kv.Event, rank int) int {
	n := 0
	for i := range events {
		if events[i].DPRank == rank && encodable(&events[i]) {
			n++
		}
	}
	return n
}

// encoder turns one DP rank's events into a batch payload. Its fields are
// the settings of the hub that owns it.
type encoder struct {
	blockSize  int
	positional bool
}

// appendMsgpack appends the vLLM EventBatch [ts, events, dp_rank] of the
// events of rank (an AllBlocksCleared first if cleared) to b.
func (e encoder) appendMsgpack(b []byte, ts float64, rank int, cleared bool, events []kv.Event) []byte {
	n := rankEvents(events, rank)
	if cleared {
		n++
	}
	b = mpArray(b, 3)
	b = mpFloat(b, ts)
	b = mpArray(b, n)
	if cleared {
		if e.positional {
			b = mpStr(mpArray(b, 1), typeCleared)
		} else {
			b = mpStr(mpStr(mpMap(b, 1), "type"), typeCleared)
		}
	}
	for i := range events {
		ev := &events[i]
		if ev.DPRank != rank || !encodable(ev) {
			continue
		}
		if e.positional {
			b = e.positionalEvent(b, ev)
		} else {
			b = e.namedEvent(b, ev)
		}
	}
	return mpInt(b, int64(rank))
}

// namedEvent appends ev as a msgpack map keyed by field name, the form of
// vLLM #42892: a consumer that knows a newer field set still finds every
// field it knows, which the positional form cannot promise.
func (e encoder) namedEvent(b []byte, ev *kv.Event) []byte {
	if ev.Kind == kv.Removed {
		b = mpMap(b, 3)
		b = mpStr(mpStr(b, "type"), typeRemoved)
		b = mpStr(b, "block_hashes")
		b = mpArray(b, len(ev.Removed))
		for _, h := range ev.Removed {
			b = mpUint(b, h)
		}
		return mpStr(mpStr(b, "medium"), medium(ev.Tier))
	}
	b = mpMap(b, 9)
	b = mpStr(mpStr(b, "type"), typeStored)
	b = mpStr(b, "block_hashes")
	b = mpArray(b, len(ev.Blocks))
	for _, blk := range ev.Blocks {
		b = mpUint(b, blk.BlockHash)
	}
	b = mpStr(b, "parent_block_hash")
	if ev.HasParent {
		b = mpUint(b, ev.Parent)
	} else {
		b = mpNil(b)
	}
	b = mpArray(mpStr(b, "token_ids"), 0)
	b = mpInt(mpStr(b, "block_size"), int64(e.blockSize))
	b = mpNil(mpStr(b, "lora_id"))
	b = mpStr(mpStr(b, "medium"), medium(ev.Tier))
	b = mpNil(mpStr(b, "lora_name"))
	return mpUint(mpStr(b, "group_idx"), 0)
}

// positionalEvent appends ev as vLLM's tagged array_like msgspec struct:
// the tag, then the fields in declaration order.
func (e encoder) positionalEvent(b []byte, ev *kv.Event) []byte {
	if ev.Kind == kv.Removed {
		b = mpStr(mpArray(b, 3), typeRemoved)
		b = mpArray(b, len(ev.Removed))
		for _, h := range ev.Removed {
			b = mpUint(b, h)
		}
		return mpStr(b, medium(ev.Tier))
	}
	b = mpStr(mpArray(b, 7), typeStored)
	b = mpArray(b, len(ev.Blocks))
	for _, blk := range ev.Blocks {
		b = mpUint(b, blk.BlockHash)
	}
	if ev.HasParent {
		b = mpUint(b, ev.Parent)
	} else {
		b = mpNil(b)
	}
	b = mpArray(b, 0) // token_ids
	b = mpInt(b, int64(e.blockSize))
	b = mpNil(b) // lora_id
	return mpStr(b, medium(ev.Tier))
}

// appendSSE appends the whole Server-Sent Events frame of a batch to b:
// the id and event lines and one data line of JSON with the named fields.
func (e encoder) appendSSE(b []byte, seq uint64, ts float64, worker, rank int, cleared bool, events []kv.Event) []byte {
	b = append(b, "id: "...)
	b = strconv.AppendUint(b, seq, 10)
	b = append(b, "\nevent: kv_events\ndata: {\"seq\":"...)
	b = strconv.AppendUint(b, seq, 10)
	b = append(b, `,"ts":`...)
	b = jsonFloat(b, ts)
	b = append(b, `,"worker":`...)
	b = strconv.AppendInt(b, int64(worker), 10)
	b = append(b, `,"dp_rank":`...)
	b = strconv.AppendInt(b, int64(rank), 10)
	b = append(b, `,"events":[`...)
	first := true
	if cleared {
		b = append(b, `{"type":"`+typeCleared+`"}`...)
		first = false
	}
	for i := range events {
		ev := &events[i]
		if ev.DPRank != rank || !encodable(ev) {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = e.jsonEvent(b, ev)
	}
	return append(b, "]}\n\n"...)
}

// jsonEvent appends ev as a JSON object with the named-map fields. Hashes are
// exact decimal uint64s; JavaScript's Number rounds those above 2^53, so a
// browser client must parse them as BigInt or compare them as strings.
func (e encoder) jsonEvent(b []byte, ev *kv.Event) []byte {
	if ev.Kind == kv.Removed {
		b = append(b, `{"type":"`+typeRemoved+`","block_hashes":[`...)
		for i, h := range ev.Removed {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendUint(b, h, 10)
		}
		b = append(b, `],"medium":"`...)
		b = append(b, medium(ev.Tier)...)
		return append(b, `"}`...)
	}
	b = append(b, `{"type":"`+typeStored+`","block_hashes":[`...)
	for i, blk := range ev.Blocks {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendUint(b, blk.BlockHash, 10)
	}
	b = append(b, `],"parent_block_hash":`...)
	if ev.HasParent {
		b = strconv.AppendUint(b, ev.Parent, 10)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"token_ids":[],"block_size":`...)
	b = strconv.AppendInt(b, int64(e.blockSize), 10)
	b = append(b, `,"lora_id":null,"medium":"`...)
	b = append(b, medium(ev.Tier)...)
	return append(b, `","lora_name":null,"group_idx":0}`...)
}

// jsonFloat appends f as a JSON number; JSON has no NaN or infinities, so a
// non-finite time is written as 0 rather than breaking the whole frame.
func jsonFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		f = 0
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}

// The mp* functions append msgpack values in their smallest form, as msgspec
// writes them; decoders accept any width of an integer family.

func mpNil(b []byte) []byte { return append(b, 0xc0) }

func mpFloat(b []byte, f float64) []byte {
	return binary.BigEndian.AppendUint64(append(b, 0xcb), math.Float64bits(f))
}

func mpUint(b []byte, v uint64) []byte {
	switch {
	case v < 0x80:
		return append(b, byte(v))
	case v <= math.MaxUint8:
		return append(b, 0xcc, byte(v))
	case v <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(b, 0xcd), uint16(v))
	case v <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(b, 0xce), uint32(v))
	}
	return binary.BigEndian.AppendUint64(append(b, 0xcf), v)
}

func mpInt(b []byte, v int64) []byte {
	switch {
	case v >= 0:
		return mpUint(b, uint64(v))
	case v >= -32:
		return append(b, byte(v)) // negative fixint
	case v >= math.MinInt8:
		return append(b, 0xd0, byte(v))
	case v >= math.MinInt16:
		return binary.BigEndian.AppendUint16(append(b, 0xd1), uint16(v))
	case v >= math.MinInt32:
		return binary.BigEndian.AppendUint32(append(b, 0xd2), uint32(v))
	}
	return binary.BigEndian.AppendUint64(append(b, 0xd3), uint64(v))
}

func mpStr(b []byte, s string) []byte {
	switch n := len(s); {
	case n < 32:
		b = append(b, 0xa0|byte(n))
	case n <= math.MaxUint8:
		b = append(b, 0xd9, byte(n))
	case n <= math.MaxUint16:
		b = binary.BigEndian.AppendUint16(append(b, 0xda), uint16(n))
	default:
		b = binary.BigEndian.AppendUint32(append(b, 0xdb), uint32(n))
	}
	return append(b, s...)
}

func mpArray(b []byte, n int) []byte { return mpHeader(b, n, 0x90, 0xdc) }

func mpMap(b []byte, n int) []byte { return mpHeader(b, n, 0x80, 0xde) }

// mpHeader appends an array or map header: the fix form below 16 entries,
// else the 16- or (code16+1) 32-bit length form.
func mpHeader(b []byte, n int, fix, code16 byte) []byte {
	switch {
	case n < 16:
		return append(b, fix|byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(b, code16), uint16(n))
	}
	return binary.BigEndian.AppendUint32(append(b, code16+1), uint32(n))
}
