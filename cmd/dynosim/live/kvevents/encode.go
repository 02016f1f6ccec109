package kvevents

import (
	"bytes"
	"math"
	"strconv"

	"github.com/dynosim/dynosim-web/kv"
	"github.com/vmihailenco/msgpack/v5"
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
	// tokens is the token ids of a block by sequence hash (nil: unknown);
	// nil leaves every token_ids empty.
	tokens func(hash uint64) []uint32
}

// tokenIDs is the token_ids of a BlockStored event: block_size ids per
// block, in order, as vLLM publishes them; empty unless every block's
// tokens are known (a partial list would misalign a consumer's hashing).
func (e encoder) tokenIDs(ev *kv.Event, visit func(uint32)) int {
	if e.tokens == nil || len(ev.Blocks) == 0 {
		return 0
	}
	n := 0
	for _, b := range ev.Blocks {
		t := e.tokens(b.BlockHash)
		if len(t) == 0 {
			return 0
		}
		n += len(t)
	}
	if visit != nil {
		for _, b := range ev.Blocks {
			for _, t := range e.tokens(b.BlockHash) {
				visit(t)
			}
		}
	}
	return n
}

// writeTokens writes ev's token_ids as a msgpack array.
func (e encoder) writeTokens(w *mpWriter, ev *kv.Event) {
	n := e.tokenIDs(ev, nil)
	w.array(n)
	if n > 0 {
		e.tokenIDs(ev, func(t uint32) { w.uint(uint64(t)) })
	}
}

// appendMsgpack appends the vLLM EventBatch [ts, events, dp_rank] of the
// events of rank (an AllBlocksCleared first if cleared) to b. It writes
// through msgpack's streaming encoder, value by value, so no event is
// reflected on; integers take their smallest form, as msgspec writes them.
func (e encoder) appendMsgpack(b []byte, ts float64, rank int, cleared bool, events []kv.Event) []byte {
	buf := bytes.NewBuffer(b)
	enc := msgpack.GetEncoder()
	defer msgpack.PutEncoder(enc)
	enc.Reset(buf)
	w := mpWriter{enc: enc}
	n := rankEvents(events, rank)
	if cleared {
		n++
	}
	w.array(3)
	w.keep(enc.EncodeFloat64(ts))
	w.array(n)
	if cleared {
		if e.positional {
			w.array(1)
		} else {
			w.mapLen(1)
			w.str("type")
		}
		w.str(typeCleared)
	}
	for i := range events {
		ev := &events[i]
		if ev.DPRank != rank || !encodable(ev) {
			continue
		}
		if e.positional {
			e.positionalEvent(&w, ev)
		} else {
			e.namedEvent(&w, ev)
		}
	}
	w.int(int64(rank))
	if w.err != nil {
		// A bytes.Buffer never fails a write, and every value here has a
		// msgpack form: an error is a bug.
		panic("kvevents: msgpack: " + w.err.Error())
	}
	return buf.Bytes()
}

// mpWriter keeps the first error of a run of msgpack writes.
type mpWriter struct {
	enc *msgpack.Encoder
	err error
}

func (w *mpWriter) keep(err error) {
	if w.err == nil {
		w.err = err
	}
}
func (w *mpWriter) array(n int)   { w.keep(w.enc.EncodeArrayLen(n)) }
func (w *mpWriter) mapLen(n int)  { w.keep(w.enc.EncodeMapLen(n)) }
func (w *mpWriter) str(s string)  { w.keep(w.enc.EncodeString(s)) }
func (w *mpWriter) uint(v uint64) { w.keep(w.enc.EncodeUint(v)) }
func (w *mpWriter) int(v int64)   { w.keep(w.enc.EncodeInt(v)) }
func (w *mpWriter) null()         { w.keep(w.enc.EncodeNil()) }
func (w *mpWriter) key(k string)  { w.str(k) }
func (w *mpWriter) hashes(h []uint64) {
	w.array(len(h))
	for _, v := range h {
		w.uint(v)
	}
}

// storedHashes are a BlockStored event's block hashes.
func storedHashes(w *mpWriter, ev *kv.Event) {
	w.array(len(ev.Blocks))
	for _, blk := range ev.Blocks {
		w.uint(blk.BlockHash)
	}
}

// parent writes a BlockStored event's parent hash, nil for none (not 0).
func parent(w *mpWriter, ev *kv.Event) {
	if ev.HasParent {
		w.uint(ev.Parent)
	} else {
		w.null()
	}
}

// namedEvent writes ev as a msgpack map keyed by field name, the form of
// vLLM #42892: a consumer that knows a newer field set still finds every
// field it knows, which the positional form cannot promise.
func (e encoder) namedEvent(w *mpWriter, ev *kv.Event) {
	if ev.Kind == kv.Removed {
		w.mapLen(3)
		w.key("type")
		w.str(typeRemoved)
		w.key("block_hashes")
		w.hashes(ev.Removed)
		w.key("medium")
		w.str(medium(ev.Tier))
		return
	}
	w.mapLen(9)
	w.key("type")
	w.str(typeStored)
	w.key("block_hashes")
	storedHashes(w, ev)
	w.key("parent_block_hash")
	parent(w, ev)
	w.key("token_ids")
	e.writeTokens(w, ev)
	w.key("block_size")
	w.int(int64(e.blockSize))
	w.key("lora_id")
	w.null()
	w.key("medium")
	w.str(medium(ev.Tier))
	w.key("lora_name")
	w.null()
	w.key("group_idx")
	w.uint(0)
}

// positionalEvent writes ev as vLLM's tagged array_like msgspec struct: the
// tag, then the fields in declaration order.
func (e encoder) positionalEvent(w *mpWriter, ev *kv.Event) {
	if ev.Kind == kv.Removed {
		w.array(3)
		w.str(typeRemoved)
		w.hashes(ev.Removed)
		w.str(medium(ev.Tier))
		return
	}
	w.array(7)
	w.str(typeStored)
	storedHashes(w, ev)
	parent(w, ev)
	e.writeTokens(w, ev)
	w.int(int64(e.blockSize))
	w.null() // lora_id
	w.str(medium(ev.Tier))
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
	b = append(b, `,"token_ids":[`...)
	first := true
	e.tokenIDs(ev, func(t uint32) {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = strconv.AppendUint(b, uint64(t), 10)
	})
	b = append(b, `],"block_size":`...)
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
