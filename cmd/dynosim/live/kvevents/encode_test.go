package kvevents

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/kv"
)

// TestEncodeRoundTrip decodes both encodings with msgpack/v5 and checks each
// field, including the BlockRemoved events that positional encoding once
// dropped under heavy removal (Dynamo #13483).
func TestEncodeRoundTrip(t *testing.T) {
	many := make([]uint64, 70000) // past the 16-bit array length form
	for i := range many {
		many[i] = uint64(i) * 0x9e3779b97f4a7c15
	}
	heavy := []kv.Event{stored(0, kv.Device, nil, 1, 2, 3)}
	for i := range 40 {
		heavy = append(heavy, removed(0, kv.Device, uint64(100+i), uint64(200+i)))
	}
	type encCase struct {
		name    string
		rank    int
		cleared bool
		events  []kv.Event
		want    []wireEvent
	}
	cases := []encCase{
		{"stored without parent", 0, false,
			[]kv.Event{stored(0, kv.Device, nil, 7, math.MaxUint64)},
			[]wireEvent{{Type: typeStored, Hashes: []uint64{7, math.MaxUint64}, Medium: "GPU", BlockSize: 16}}},
		{"stored with parent 0", 0, false, // 0 is a hash, not "no parent"
			[]kv.Event{stored(0, kv.Device, ptr(0), 1<<40)},
			[]wireEvent{{Type: typeStored, Hashes: []uint64{1 << 40}, Parent: uint64(0), Medium: "GPU", BlockSize: 16}}},
		{"host tier", 2, false,
			[]kv.Event{stored(2, kv.HostPinned, ptr(300), 301), removed(2, kv.HostPinned, 300)},
			[]wireEvent{
				{Type: typeStored, Hashes: []uint64{301}, Parent: uint64(300), Medium: "CPU", BlockSize: 16},
				{Type: typeRemoved, Hashes: []uint64{300}, Medium: "CPU"},
			}},
		{"lower tiers", 0, false,
			[]kv.Event{removed(0, kv.Disk, 1), removed(0, kv.Object, 2)},
			[]wireEvent{{Type: typeRemoved, Hashes: []uint64{1}, Medium: "DISK"}, {Type: typeRemoved, Hashes: []uint64{2}, Medium: "OBJECT"}}},
		{"cleared then stored", 1, true,
			[]kv.Event{stored(1, kv.Device, nil, 5)},
			[]wireEvent{{Type: typeCleared}, {Type: typeStored, Hashes: []uint64{5}, Medium: "GPU", BlockSize: 16}}},
		{"other ranks and unknown kinds skipped", 1, false,
			[]kv.Event{stored(0, kv.Device, nil, 1), {DPRank: 1}, removed(1, kv.Device, 9)},
			[]wireEvent{{Type: typeRemoved, Hashes: []uint64{9}, Medium: "GPU"}}},
		{"negative rank", -40, false,
			[]kv.Event{removed(-40, kv.Device, 3)},
			[]wireEvent{{Type: typeRemoved, Hashes: []uint64{3}, Medium: "GPU"}}},
		{"large removal", 0, false,
			[]kv.Event{removed(0, kv.Device, many...)},
			[]wireEvent{{Type: typeRemoved, Hashes: many, Medium: "GPU"}}},
	}
	// Heavy removal: 40 Device BlockRemoved events must all survive.
	hw := []wireEvent{{Type: typeStored, Hashes: []uint64{1, 2, 3}, Medium: "GPU", BlockSize: 16}}
	for i := range 40 {
		hw = append(hw, wireEvent{Type: typeRemoved, Hashes: []uint64{uint64(100 + i), uint64(200 + i)}, Medium: "GPU"})
	}
	cases = append(cases, encCase{"heavy removal", 0, false, heavy, hw})

	for _, positional := range []bool{false, true} {
		enc := encoder{blockSize: 16, positional: positional}
		for _, c := range cases {
			name := c.name + map[bool]string{false: "/named", true: "/positional"}[positional]
			t.Run(name, func(t *testing.T) {
				p := enc.appendMsgpack(nil, 12.5, c.rank, c.cleared, c.events)
				got, err := decodePayload(p, positional)
				if err != nil {
					t.Fatal(err)
				}
				if got.TS != 12.5 || got.Rank != int64(c.rank) {
					t.Errorf("ts, rank = %v, %d; want 12.5, %d", got.TS, got.Rank, c.rank)
				}
				if !reflect.DeepEqual(got.Events, c.want) {
					t.Errorf("events:\n got %.300v\nwant %.300v", got.Events, c.want)
				}
			})
		}
	}
}

// TestEncodeSSE checks the JSON of an SSE frame: exact uint64 hashes, null
// parent, the named fields and nothing else.
func TestEncodeSSE(t *testing.T) {
	enc := encoder{blockSize: 32}
	events := []kv.Event{
		stored(3, kv.Device, nil, math.MaxUint64, 1<<53+1),
		stored(3, kv.HostPinned, ptr(42), 43),
		removed(3, kv.Device, 7),
	}
	cases := []struct {
		name    string
		ts      float64
		cleared bool
		wantTS  string
		types   []string
	}{
		{"events", 1.25, false, "1.25", []string{typeStored, typeStored, typeRemoved}},
		{"cleared first", 0, true, "0", []string{typeCleared, typeStored, typeStored, typeRemoved}},
		{"non-finite ts", math.NaN(), false, "0", []string{typeStored, typeStored, typeRemoved}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			frame := string(enc.appendSSE(nil, 99, c.ts, 5, 3, c.cleared, events))
			head, data, ok := strings.Cut(frame, "\ndata: ")
			if !ok || head != "id: 99\nevent: kv_events" || !strings.HasSuffix(data, "\n\n") || strings.Count(data, "\n") != 2 {
				t.Fatalf("frame %q", frame)
			}
			dec := json.NewDecoder(strings.NewReader(data))
			dec.UseNumber()
			var got map[string]any
			if err := dec.Decode(&got); err != nil {
				t.Fatal(err)
			}
			if got["seq"] != json.Number("99") || got["ts"] != json.Number(c.wantTS) ||
				got["worker"] != json.Number("5") || got["dp_rank"] != json.Number("3") || len(got) != 5 {
				t.Errorf("batch fields %v", got)
			}
			evs := got["events"].([]any)
			var types []string
			for _, e := range evs {
				types = append(types, e.(map[string]any)["type"].(string))
			}
			if !reflect.DeepEqual(types, c.types) {
				t.Fatalf("types %v, want %v", types, c.types)
			}
			first := evs[len(evs)-3].(map[string]any)
			want := map[string]any{
				"type": typeStored, "block_hashes": []any{json.Number("18446744073709551615"), json.Number("9007199254740993")},
				"parent_block_hash": nil, "token_ids": []any{}, "block_size": json.Number("32"), "lora_id": nil,
				"medium": "GPU", "lora_name": nil, "group_idx": json.Number("0"),
			}
			if !reflect.DeepEqual(first, want) {
				t.Errorf("stored event\n got %v\nwant %v", first, want)
			}
			if p := evs[len(evs)-2].(map[string]any); p["parent_block_hash"] != json.Number("42") || p["medium"] != "CPU" {
				t.Errorf("second stored event %v", p)
			}
			want = map[string]any{"type": typeRemoved, "block_hashes": []any{json.Number("7")}, "medium": "GPU"}
			if r := evs[len(evs)-1].(map[string]any); !reflect.DeepEqual(r, want) {
				t.Errorf("removed event %v, want %v", r, want)
			}
		})
	}
}

// fuzzEvents builds events from fuzz bytes: per event a kind byte, a rank
// byte and a count byte, then that many 8-byte hashes (short input ends
// the event list).
func fuzzEvents(data []byte) []kv.Event {
	var events []kv.Event
	for len(data) >= 3 {
		kb, rank, n := data[0], int(data[1]%3), int(data[2]%8)
		data = data[3:]
		var hashes []uint64
		for ; n > 0 && len(data) >= 8; n-- {
			hashes = append(hashes, binary.LittleEndian.Uint64(data))
			data = data[8:]
		}
		tier := kv.Tier(kb >> 4 % 4)
		switch kb % 4 {
		case 0, 1:
			var parent *uint64
			if kb&8 != 0 && len(hashes) > 0 {
				parent = ptr(hashes[0] ^ 1)
			}
			events = append(events, stored(rank, tier, parent, hashes...))
		case 2:
			events = append(events, removed(rank, tier, hashes...))
		default:
			events = append(events, kv.Event{DPRank: rank, Kind: kv.EventKind(kb), Removed: hashes})
		}
	}
	return events
}

// FuzzEncode publishes fuzz-built events in both encodings and checks that
// every batch decodes, as msgpack and as JSON, to the counts the hub reports
// and to the blocks of the input.
func FuzzEncode(f *testing.F) {
	f.Add([]byte{0, 0, 1, 1, 2, 3, 4, 5, 6, 7, 8}, false)
	f.Add([]byte{2, 1, 2, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0, 0, 0, 0, 0, 9, 2, 0}, true)
	f.Add([]byte{3, 0, 0, 0x1a, 2, 1, 0, 0, 0, 0, 0, 0, 0, 0}, false)
	f.Fuzz(func(t *testing.T, data []byte, cleared bool) {
		events := fuzzEvents(data)
		var want Counts
		ranks := map[int]bool{}
		for _, ev := range events {
			switch ev.Kind {
			case kv.Stored:
				want.StoredBlocks += uint64(len(ev.Blocks))
			case kv.Removed:
				want.RemovedBlocks += uint64(len(ev.Removed))
			default:
				continue
			}
			ranks[ev.DPRank] = true
		}
		want.Batches = uint64(len(ranks))
		if cleared {
			want.Cleared, want.Batches = 1, want.Batches+1
		}
		for _, positional := range []bool{false, true} {
			h := NewHub(Options{Model: "m", BlockSize: 16, Positional: positional})
			h.Publish(1, 2.5, events)
			if cleared {
				h.PublishCleared(1, 3, 0)
			}
			var got Counts
			for _, b := range h.retained(0) {
				wb, err := decodePayload(b.msgpack, positional)
				if err != nil {
					t.Fatalf("positional %v, seq %d: %v", positional, b.seq, err)
				}
				got.add(wb.counts())
				_, data, _ := strings.Cut(string(b.sse), "\ndata: ")
				var js struct {
					Seq    uint64 `json:"seq"`
					Events []struct {
						Type   string   `json:"type"`
						Hashes []uint64 `json:"block_hashes"`
					} `json:"events"`
				}
				if err := json.NewDecoder(bytes.NewReader([]byte(data))).Decode(&js); err != nil || js.Seq != b.seq || len(js.Events) != len(wb.Events) {
					t.Fatalf("SSE JSON of seq %d (%v): %q", b.seq, err, data)
				}
				for i, ev := range js.Events {
					if ev.Type != wb.Events[i].Type || len(ev.Hashes) != len(wb.Events[i].Hashes) {
						t.Fatalf("SSE event %d = %+v, msgpack %+v", i, ev, wb.Events[i])
					}
				}
			}
			if hc := h.Counts(); got != want || hc != want {
				t.Fatalf("positional %v: decoded %+v, hub %+v, want %+v", positional, got, hc, want)
			}
			_ = h.Close()
		}
	})
}
