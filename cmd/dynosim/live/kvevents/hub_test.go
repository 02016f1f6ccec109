package kvevents

import (
	"bytes"
	"slices"
	"strconv"
	"testing"

	"github.com/dynosim/dynosim-web/kv"
	"github.com/prometheus/client_golang/prometheus"
)

// TestPublishBatches checks the grouping into one batch per DP rank, the
// numbering from 0, the topic and the counts.
func TestPublishBatches(t *testing.T) {
	cases := []struct {
		name   string
		worker int
		events []kv.Event
		ranks  []int64 // of the batches, in order
		counts Counts
	}{
		{"empty", 0, nil, nil, Counts{}},
		{"unknown kinds only", 0, []kv.Event{{DPRank: 1}}, nil, Counts{}},
		{"one rank", 3, []kv.Event{stored(0, kv.Device, nil, 1, 2), removed(0, kv.Device, 1)}, []int64{0},
			Counts{StoredBlocks: 2, RemovedBlocks: 1, Batches: 1}},
		{"ranks in order of first appearance", 12, []kv.Event{
			removed(2, kv.Device, 9), stored(0, kv.Device, nil, 1), stored(2, kv.HostPinned, nil, 5, 6), removed(0, kv.Device, 1),
		}, []int64{2, 0}, Counts{StoredBlocks: 3, RemovedBlocks: 2, Batches: 2}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := NewHub(Options{Model: "org/model", BlockSize: 16})
			defer h.Close()
			h.Publish(c.worker, 1, c.events)
			got := h.retained(0)
			if len(got) != len(c.ranks) {
				t.Fatalf("%d batches, want %d", len(got), len(c.ranks))
			}
			for i, b := range got {
				wb, err := decodePayload(b.msgpack, false)
				if err != nil {
					t.Fatal(err)
				}
				if b.seq != uint64(i) || wb.Rank != c.ranks[i] {
					t.Errorf("batch %d: seq %d rank %d, want %d %d", i, b.seq, wb.Rank, i, c.ranks[i])
				}
				if want := "kv@worker-" + strconv.Itoa(c.worker) + "@org/model"; string(b.topic) != want {
					t.Errorf("topic %q, want %q", b.topic, want)
				}
				if !bytes.Equal(b.seqBE, []byte{0, 0, 0, 0, 0, 0, 0, byte(i)}) {
					t.Errorf("seq frame % x", b.seqBE)
				}
			}
			if h.Counts() != c.counts {
				t.Errorf("counts %+v, want %+v", h.Counts(), c.counts)
			}
		})
	}
}

// TestPublishCopies checks that a batch does not change when the engine
// reuses its event slices for the next pass.
func TestPublishCopies(t *testing.T) {
	h := NewHub(Options{Model: "m", BlockSize: 16})
	defer h.Close()
	events := []kv.Event{stored(0, kv.Device, nil, 1, 2, 3), removed(0, kv.Device, 4, 5)}
	h.Publish(0, 1, events)
	b := h.retained(0)[0]
	mp, sse := bytes.Clone(b.msgpack), bytes.Clone(b.sse)
	events[0].Blocks[0].BlockHash, events[1].Removed[0] = 99, 98
	events[0].Tier = kv.HostPinned
	h.Publish(0, 2, events[:1])
	if !bytes.Equal(b.msgpack, mp) || !bytes.Equal(b.sse, sse) {
		t.Fatal("a published batch changed with its caller's events")
	}
}

// TestRetain checks the ring: the last Retain batches, from any seq.
func TestRetain(t *testing.T) {
	h := NewHub(Options{Retain: 5})
	defer h.Close()
	for i := range 12 {
		h.Publish(0, float64(i), []kv.Event{removed(0, kv.Device, uint64(i))})
	}
	cases := []struct {
		from uint64
		want []uint64
	}{
		{0, []uint64{7, 8, 9, 10, 11}},
		{7, []uint64{7, 8, 9, 10, 11}},
		{10, []uint64{10, 11}},
		{11, []uint64{11}},
		{12, nil},
		{1 << 63, nil},
	}
	for _, c := range cases {
		var got []uint64
		for _, b := range h.retained(c.from) {
			got = append(got, b.seq)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("retained(%d) = %v, want %v", c.from, got, c.want)
		}
	}
}

// TestCollectors reads the counters through a registry, as a scrape does.
func TestCollectors(t *testing.T) {
	h := NewHub(Options{})
	defer h.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(h.Collectors()...)
	h.Publish(0, 0, []kv.Event{stored(0, kv.Device, nil, 1, 2, 3), removed(0, kv.Device, 1)})
	h.Publish(1, 0, []kv.Event{removed(1, kv.Device, 2)})
	h.PublishCleared(2, 0, 0)
	h.droppedZMQ.Add(4)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			name := mf.GetName()
			for _, l := range m.GetLabel() {
				name += "/" + l.GetValue()
			}
			got[name] = m.GetCounter().GetValue()
		}
	}
	want := map[string]float64{
		"dynosim_kv_events_blocks_stored_total":  3,
		"dynosim_kv_events_blocks_removed_total": 2,
		"dynosim_kv_events_cleared_total":        1,
		"dynosim_kv_events_batches_total":        3,
		"dynosim_kv_events_dropped_total/zmq":    4,
		"dynosim_kv_events_dropped_total/sse":    0,
	}
	if len(got) != len(want) {
		t.Errorf("metrics %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
}

// TestClosedHub checks that a closed hub discards batches and refuses
// listeners instead of panicking.
func TestClosedHub(t *testing.T) {
	h := NewHub(Options{})
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	h.Publish(0, 0, []kv.Event{removed(0, kv.Device, 1)})
	h.PublishCleared(0, 0, 0)
	if c := h.Counts(); c != (Counts{}) {
		t.Errorf("counts after Close %+v", c)
	}
	if err := h.ListenZMQ(t.Context(), "tcp://127.0.0.1:0", ""); err == nil {
		t.Error("ListenZMQ on a closed hub succeeded")
	}
}

// BenchmarkPublish measures a typical pass: one BlockStored of 4 blocks and
// one BlockRemoved of 2, with one SSE subscriber keeping up.
func BenchmarkPublish(b *testing.B) {
	h := NewHub(Options{Model: "m", BlockSize: 16})
	defer h.Close()
	_, sub := h.subscribe(0)
	events := []kv.Event{stored(0, kv.Device, ptr(7), 1, 2, 3, 4), removed(0, kv.Device, 5, 6)}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		h.Publish(0, float64(i), events)
		<-sub.ch
	}
}
