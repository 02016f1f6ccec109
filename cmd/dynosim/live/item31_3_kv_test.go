package live

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/core/router"
	"github.com/dynosim/dynosim-web/core/sim"
	"github.com/dynosim/dynosim-web/internal/patience"
	"github.com/dynosim/dynosim-web/kv"
	"github.com/go-zeromq/zmq4"
	"github.com/vmihailenco/msgpack/v5"
)

// wireEvent is one KV event as a ZMQ subscriber decodes it.
type wireEvent struct {
	kind     string
	hashes   []uint64
	parent   uint64
	hasPar   bool
	tokens   []uint32
	blockSz  int
	medium   string
	worker   int
	rank     int
	batchSeq uint64
}

func asUint(v any) uint64 {
	r := reflect.ValueOf(v)
	if r.CanUint() {
		return r.Uint()
	}
	return uint64(r.Int())
}

func asUints(v any) []uint64 {
	list, _ := v.([]any)
	out := make([]uint64, 0, len(list))
	for _, h := range list {
		out = append(out, asUint(h))
	}
	return out
}

// decodeWire decodes a batch in either encoding (named maps or vLLM's
// positional tagged arrays) from topic kv@worker-<i>@<model>.
func decodeWire(t *testing.T, topic, seq, payload []byte) []wireEvent {
	t.Helper()
	var b []any
	if err := msgpack.Unmarshal(payload, &b); err != nil || len(b) != 3 {
		t.Fatalf("payload %x: %v", payload, err)
	}
	parts := strings.Split(string(topic), "@")
	w, err := strconv.Atoi(strings.TrimPrefix(parts[1], "worker-"))
	if err != nil {
		t.Fatalf("topic %q", topic)
	}
	var out []wireEvent
	for _, e := range b[1].([]any) {
		ev := wireEvent{worker: w, rank: int(asUint(b[2])), batchSeq: binary.BigEndian.Uint64(seq)}
		var toks []uint64
		switch x := e.(type) {
		case map[string]any:
			ev.kind, _ = x["type"].(string)
			ev.hashes = asUints(x["block_hashes"])
			if p := x["parent_block_hash"]; p != nil {
				ev.parent, ev.hasPar = asUint(p), true
			}
			toks = asUints(x["token_ids"])
			if bs := x["block_size"]; bs != nil {
				ev.blockSz = int(asUint(bs))
			}
			ev.medium, _ = x["medium"].(string)
		case []any:
			ev.kind, _ = x[0].(string)
			if len(x) > 1 {
				ev.hashes = asUints(x[1])
			}
			if ev.kind == "BlockStored" {
				if x[2] != nil {
					ev.parent, ev.hasPar = asUint(x[2]), true
				}
				toks = asUints(x[3])
				ev.blockSz = int(asUint(x[4]))
				ev.medium, _ = x[6].(string)
			}
		}
		for _, tk := range toks {
			ev.tokens = append(ev.tokens, uint32(tk))
		}
		out = append(out, ev)
	}
	return out
}

// replayAll asks the replay socket for every retained batch.
func replayAll(t *testing.T, ctx context.Context, addr string) []wireEvent {
	t.Helper()
	dealer := zmq4.NewDealer(ctx)
	defer dealer.Close()
	if err := dealer.Dial(addr); err != nil {
		t.Fatal(err)
	}
	if err := dealer.Send(zmq4.NewMsgFrom([]byte{}, binary.BigEndian.AppendUint64(nil, 0))); err != nil {
		t.Fatal(err)
	}
	var out []wireEvent
	for {
		msg, err := dealer.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if binary.BigEndian.Uint64(msg.Frames[1]) == ^uint64(0) {
			return out
		}
		// Replay frames carry no topic: the caller knows each batch's worker
		// from the PUB topics.
		out = append(out, decodeWire(t, []byte("kv@worker-0@m"), msg.Frames[1], msg.Frames[2])...)
	}
}

// TestItem31_3KVEventsTokenIDs replays dynosim live's KV events, as a ZMQ
// subscriber receives them, into the project's own indexer (core/router
// Indexer) and checks that hashing every BlockStored event's token_ids the
// way the event's hashes are made (Dynamo's: kv.LocalHash, XXH3-64 seed
// 1337 of the block's tokens as little-endian uint32s, chained by
// kv.ChainHash with the parent's hash) gives the event's block hashes;
// then that the indexer finds each prompt's blocks where it ran.
func TestItem31_3KVEventsTokenIDs(t *testing.T) {
	for _, tc := range []struct {
		name       string
		positional bool
		sets       []string
	}{
		{"named maps", false, []string{"engine.workers.aggregated.kv_cache.block_size=16"}},
		{"positional arrays, eviction", true, []string{"engine.workers.aggregated.kv_cache.block_size=16",
			"engine.workers.aggregated.kv_cache.capacity.type=fixed", "engine.workers.aggregated.kv_cache.capacity.blocks=40"}},
		{"two DP ranks", false, []string{"engine.workers.aggregated.kv_cache.block_size=32", "engine.workers.aggregated.parallelism.attention_data=2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, hs := start(t, twoWorkers, Options{Speedup: 8, ZMQ: "tcp://127.0.0.1:0", ZMQReplay: "tcp://127.0.0.1:0", Positional: tc.positional,
				Inputs: sim.Inputs{Sets: tc.sets}})
			bs := s.d.live.Engine.BlockSize
			ctx, cancel := patience.Context(t)
			defer cancel()
			// A ZMQ subscriber sees the topics (the worker of each batch).
			pub, rep := s.hub.Addrs()
			sub := zmq4.NewSub(ctx)
			defer sub.Close()
			if err := sub.Dial(pub); err != nil {
				t.Fatal(err)
			}
			if err := sub.SetOption(zmq4.OptionSubscribe, "kv@"); err != nil {
				t.Fatal(err)
			}
			workerOf := map[uint64]int{} // batch seq -> worker, from the topics
			type topicMsg struct {
				seq    uint64
				worker int
			}
			topics := make(chan topicMsg, 4096)
			go func() {
				for {
					msg, err := sub.Recv()
					if err != nil {
						close(topics)
						return
					}
					w, _ := strconv.Atoi(strings.TrimPrefix(strings.Split(string(msg.Frames[0]), "@")[1], "worker-"))
					topics <- topicMsg{binary.BigEndian.Uint64(msg.Frames[1]), w}
				}
			}()
			// Prompts of token ids sharing prefixes, served one at a time.
			var prompts [][]uint32
			for i := range 10 {
				p := make([]uint32, 0, 5*bs+7)
				for j := range 5*bs + 7 {
					p = append(p, uint32(1000*(i/3)+j+1))
				}
				p[len(p)-1] = uint32(900000 + i)
				prompts = append(prompts, p)
				var sb bytes.Buffer
				fmt.Fprintf(&sb, `{"prompt":%s,"max_tokens":%d}`, strings.ReplaceAll(fmt.Sprint(p), " ", ","), bs+3)
				resp := post(t, ctx, hs.URL+"/v1/completions", sb.String())
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					t.Fatalf("request %d: %d %s", i, resp.StatusCode, b)
				}
			}
			// Every batch published, with its worker known from its topic.
			var evs []wireEvent
			patience.Until(t, "every KV batch replayed and its topic seen", func() (bool, string) {
				for more := true; more; {
					select {
					case m := <-topics:
						workerOf[m.seq] = m.worker
					default:
						more = false
					}
				}
				evs = replayAll(t, ctx, rep)
				n := s.hub.Counts().Batches
				seen := map[uint64]bool{}
				for _, e := range evs {
					seen[e.batchSeq] = true
				}
				missing := 0
				for q := range n {
					if _, ok := workerOf[q]; !ok && q >= 2*uint64(s.d.live.Ranks) {
						missing++
					}
				}
				return uint64(len(seen)) == n && missing == 0, fmt.Sprintf("%d of %d batches replayed, %d topics missing", len(seen), n, missing)
			})
			ix := router.NewIndexer(bs)
			nextID := map[[2]int]uint64{}
			stored := 0
			for _, e := range evs {
				if e.kind == "AllBlocksCleared" {
					continue
				}
				w, ok := workerOf[e.batchSeq]
				if !ok {
					t.Fatalf("batch %d: no topic", e.batchSeq)
				}
				k := [2]int{w, e.rank}
				ev := kv.Event{ID: nextID[k], DPRank: e.rank}
				nextID[k]++
				if e.medium != "GPU" {
					ev.Tier = kv.HostPinned
				}
				switch e.kind {
				case "BlockStored":
					stored++
					if e.blockSz != bs || len(e.tokens) != bs*len(e.hashes) {
						t.Fatalf("BlockStored of %d blocks (block_size %d) has %d token_ids, want %d", len(e.hashes), e.blockSz, len(e.tokens), bs*len(e.hashes))
					}
					// Hash the token_ids as the event's hashes are made.
					prev, has := e.parent, e.hasPar
					for i, h := range e.hashes {
						want := kv.LocalHash(e.tokens[i*bs : (i+1)*bs])
						if has {
							want = kv.ChainHash(prev, want)
						}
						if want != h {
							t.Fatalf("block %d of a BlockStored event: hash %#x, its token_ids hash to %#x", i, h, want)
						}
						prev, has = h, true
						ev.Blocks = append(ev.Blocks, kv.StoredBlock{BlockHash: h, TokensHash: kv.LocalHash(e.tokens[i*bs : (i+1)*bs])})
					}
					ev.Kind, ev.Parent, ev.HasParent = kv.Stored, e.parent, e.hasPar
				case "BlockRemoved":
					ev.Kind, ev.Removed = kv.Removed, e.hashes
				default:
					t.Fatalf("event type %q", e.kind)
				}
				if err := ix.Apply(w, []kv.Event{ev}); err != nil {
					t.Fatalf("indexer: %v", err)
				}
			}
			if stored == 0 {
				t.Fatal("no BlockStored event")
			}
			// The last prompt just ran: the indexer has all its full blocks on
			// the worker that served it, as the router of this server would.
			last := prompts[len(prompts)-1]
			hashes := ix.Hashes(last, nil)
			best := 0
			for w := range s.d.live.Workers() {
				for r := range s.d.live.Ranks {
					best = max(best, ix.Overlap(w, r, hashes))
				}
			}
			if best != len(last)/bs {
				t.Fatalf("indexer overlap of the last prompt: %d blocks, want %d", best, len(last)/bs)
			}
		})
	}
}
