package live

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dynosim/dynosim-web/core/sim"
	"github.com/dynosim/dynosim-web/internal/promtest"
	"github.com/go-zeromq/zmq4"
	"github.com/vmihailenco/msgpack/v5"
)

// load sends n streaming completions, c at a time, with prompts that share
// a prefix by fours.
func load(t *testing.T, base string, n, c, maxTokens int) {
	t.Helper()
	var wg sync.WaitGroup
	sem := make(chan struct{}, c)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			body := fmt.Sprintf(`{"prompt":%q,"max_tokens":%d,"stream":true}`, strings.Repeat(fmt.Sprintf("topic %d ", i/4), 60)+fmt.Sprint(i), maxTokens)
			resp := post(t, context.Background(), base+"/v1/completions", body)
			defer resp.Body.Close()
			if b, _ := io.ReadAll(resp.Body); resp.StatusCode != 200 || !strings.HasSuffix(string(b), "data: [DONE]\n\n") {
				t.Errorf("request %d: %d %s", i, resp.StatusCode, b)
			}
		}()
	}
	wg.Wait()
}

// A real Prometheus server (Debian's, started here on loopback) scrapes the
// live server's /metrics, and its query API returns the vLLM names.
func TestPrometheusScrapesLive(t *testing.T) {
	_, hs := start(t, twoWorkers, Options{Speedup: 4})
	load(t, hs.URL, 12, 4, 8)
	u, _ := url.Parse(hs.URL)
	prom := promtest.Start(t, []string{u.Host}, 500*time.Millisecond)
	ctx := context.Background()
	if err := prom.WaitTargets(ctx, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	done, err := prom.WaitFor(ctx, `sum(vllm:request_success_total{finished_reason="length"})`, 20*time.Second,
		func(s []promtest.Sample) bool { return len(s) == 1 && s[0].Value == 12 })
	if err != nil {
		t.Fatalf("completed requests in Prometheus: %v (%v)", done, err)
	}
	names, err := prom.MetricNames(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
		"vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total", "vllm:num_preemptions_total",
		"vllm:prompt_tokens_total", "vllm:generation_tokens_total", "vllm:time_to_first_token_seconds_bucket",
		"vllm:inter_token_latency_seconds_bucket", "vllm:e2e_request_latency_seconds_bucket", "vllm:request_queue_time_seconds_bucket",
		"dynosim_kv_events_blocks_stored_total"} {
		if !slices.Contains(names, n) {
			t.Errorf("Prometheus has no %s", n)
		}
	}
	gen, err := prom.Query(ctx, `sum(vllm:generation_tokens_total)`)
	if err != nil || len(gen) != 1 || gen[0].Value != 12*8 {
		t.Errorf("generation tokens %v (%v), want 96", gen, err)
	}
	perWorker, err := prom.Query(ctx, `sum by (worker) (vllm:request_success_total)`)
	if err != nil || len(perWorker) != 2 {
		t.Errorf("per-worker series %v (%v), want two workers", perWorker, err)
	}
}

// A ZMQ subscriber to the KV events, in vLLM's named-map format, sees
// every block the server counts as stored and removed, under eviction
// pressure (a pool of 48 blocks), and the stream is consistent: a block is
// removed only after it was stored.
func TestKVEventsMatchCounts(t *testing.T) {
	s, hs := start(t, twoWorkers, Options{Speedup: 4, ZMQ: "tcp://127.0.0.1:0", ZMQReplay: "tcp://127.0.0.1:0", Inputs: sim.Inputs{Sets: []string{
		"engine.workers.aggregated.parallelism.replicas=1", "engine.workers.aggregated.kv_cache.block_size=16",
		"engine.workers.aggregated.kv_cache.capacity.type=fixed", "engine.workers.aggregated.kv_cache.capacity.blocks=48"}}})
	pub, rep := s.hub.Addrs()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sub := zmq4.NewSub(ctx)
	defer sub.Close()
	if err := sub.Dial(pub); err != nil {
		t.Fatal(err)
	}
	if err := sub.SetOption(zmq4.OptionSubscribe, "kv@"); err != nil {
		t.Fatal(err)
	}
	type wire struct {
		seq            uint64
		stored, remove []uint64
		cleared        bool
	}
	got := make(chan wire, 4096)
	go func() {
		for {
			msg, err := sub.Recv()
			if err != nil {
				close(got)
				return
			}
			if w, ok := decodeBatch(t, msg.Frames[1], msg.Frames[2]); ok {
				got <- wire(w)
			}
		}
	}()
	time.Sleep(200 * time.Millisecond) // the subscription reaches the publisher; replay fills what it misses
	load(t, hs.URL, 40, 4, 6)
	want := s.hub.Counts()
	if want.RemovedBlocks == 0 {
		t.Fatalf("no eviction under pressure: %+v", want)
	}
	// Collect until the stream goes quiet, then replay what the subscriber
	// missed before its subscription reached the publisher (the start-up
	// batches at least).
	batches := map[uint64]wire{}
	for uint64(len(batches)) < want.Batches {
		select {
		case w := <-got:
			batches[w.seq] = w
		case <-time.After(500 * time.Millisecond):
			dealer := zmq4.NewDealer(ctx)
			if err := dealer.Dial(rep); err != nil {
				t.Fatal(err)
			}
			if err := dealer.Send(zmq4.NewMsgFrom([]byte{}, binary.BigEndian.AppendUint64(nil, 0))); err != nil {
				t.Fatal(err)
			}
			for {
				msg, err := dealer.Recv()
				if err != nil || binary.BigEndian.Uint64(msg.Frames[1]) == ^uint64(0) {
					break
				}
				if w, ok := decodeBatch(t, msg.Frames[1], msg.Frames[2]); ok {
					batches[w.seq] = wire(w)
				}
			}
			dealer.Close()
			if uint64(len(batches)) < want.Batches {
				t.Fatalf("subscriber has %d of %d batches", len(batches), want.Batches)
			}
		}
	}
	// The first batch (one worker, one rank) clears what a router knew.
	if w := batches[0]; !w.cleared || len(w.stored)+len(w.remove) != 0 {
		t.Fatalf("batch 0: %+v, want the start-up AllBlocksCleared", w)
	}
	resident := map[uint64]bool{}
	var stored, removed uint64
	for seq := range want.Batches {
		w, ok := batches[seq]
		if !ok {
			t.Fatalf("batch %d missing", seq)
		}
		for _, h := range w.stored {
			resident[h] = true
		}
		for _, h := range w.remove {
			if !resident[h] {
				t.Fatalf("batch %d removes block %x, never stored", seq, h)
			}
			delete(resident, h)
		}
		stored, removed = stored+uint64(len(w.stored)), removed+uint64(len(w.remove))
	}
	if stored != want.StoredBlocks || removed != want.RemovedBlocks {
		t.Fatalf("subscriber: %d stored, %d removed; server: %+v", stored, removed, want)
	}
	m := scrape(t, hs.URL)
	if metricSum(m, "dynosim_kv_events_blocks_stored_total") != float64(stored) || metricSum(m, "dynosim_kv_events_blocks_removed_total") != float64(removed) {
		t.Fatalf("/metrics: %s", grep(m, "dynosim_kv_events"))
	}
	if len(resident) > 48 {
		t.Fatalf("%d blocks resident in a pool of 48", len(resident))
	}
}

// decodeBatch decodes one ZMQ batch in the named-map format.
func decodeBatch(t *testing.T, seq, payload []byte) (w struct {
	seq            uint64
	stored, remove []uint64
	cleared        bool
}, ok bool) {
	var b []any
	if err := msgpack.Unmarshal(payload, &b); err != nil || len(b) != 3 {
		t.Errorf("payload %x: %v", payload, err)
		return w, false
	}
	w.seq = binary.BigEndian.Uint64(seq)
	for _, e := range b[1].([]any) {
		ev := e.(map[string]any)
		var hs []uint64
		list, _ := ev["block_hashes"].([]any) // none in AllBlocksCleared
		for _, h := range list {
			// msgpack packs an integer in its smallest form, and the
			// decoder hands back that width.
			v := reflect.ValueOf(h)
			if v.CanUint() {
				hs = append(hs, v.Uint())
			} else {
				hs = append(hs, uint64(v.Int()))
			}
		}
		switch ev["type"] {
		case "BlockStored":
			if ev["medium"] != "GPU" || ev["block_size"] == nil {
				t.Errorf("stored event %v", ev)
			}
			w.stored = append(w.stored, hs...)
		case "BlockRemoved":
			w.remove = append(w.remove, hs...)
		case "AllBlocksCleared":
			w.cleared = true
		}
	}
	return w, true
}
