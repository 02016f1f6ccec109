package live

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"testing"

	"github.com/dynosim/dynosim-web/cmd/dynosim/live/fpm"
	"github.com/dynosim/dynosim-web/core/sim"
	"github.com/dynosim/dynosim-web/internal/patience"
	"github.com/go-zeromq/zmq4"
	"github.com/vmihailenco/msgpack/v5"
)

// fpmKeys are the keys of upstream's ForwardPassMetrics map and of its two
// nested maps (components/src/dynamo/common/forward_pass_metrics.py).
var fpmKeys = map[string][]string{
	"": {"counter_id", "dp_rank", "queued_requests", "scheduled_requests", "version", "wall_time", "worker_id"},
	"scheduled_requests": {"num_decode_requests", "num_prefill_requests", "sum_decode_kv_tokens", "sum_prefill_kv_tokens",
		"sum_prefill_tokens", "var_decode_kv_tokens", "var_prefill_length"},
	"queued_requests": {"num_decode_requests", "num_prefill_requests", "sum_decode_kv_tokens", "sum_prefill_tokens",
		"var_decode_kv_tokens", "var_prefill_length"},
}

// fpmMsg is one received message, checked against the wire format.
type fpmMsg struct {
	sock int
	seq  uint64
	m    fpm.Message
}

// decodeFPM checks a message's frames and key names and decodes it.
func decodeFPM(frames [][]byte) (fpm.Message, uint64, error) {
	var m fpm.Message
	if len(frames) != 3 || len(frames[0]) != 0 || len(frames[1]) != 8 {
		return m, 0, fmt.Errorf("frames %q: want an empty topic, an 8-byte seq and a payload", frames)
	}
	var raw map[string]any
	if err := msgpack.Unmarshal(frames[2], &raw); err != nil {
		return m, 0, err
	}
	for name, want := range fpmKeys {
		mp := raw
		if name != "" {
			mp, _ = raw[name].(map[string]any)
		}
		if got := slices.Sorted(maps.Keys(mp)); !slices.Equal(got, want) {
			return m, 0, fmt.Errorf("map %q has keys %v, want %v", name, got, want)
		}
	}
	if err := msgpack.Unmarshal(frames[2], &m); err != nil {
		return m, 0, err
	}
	return m, binary.BigEndian.Uint64(frames[1]), nil
}

func idle(m fpm.Message) bool {
	return m.WallTime == 0 && m.ScheduledRequests == (fpm.Scheduled{}) && m.QueuedRequests == (fpm.Queued{})
}

// TestItem31_3ForwardPassMetrics subscribes to every rank's
// forward-pass-metric socket of dynosim live (--fpm-port), waits for each
// rank's idle heartbeat (all zeros), sends prompts of distinct tokens (no
// prefix-cache hits) and checks the messages: upstream's field names, the
// socket's worker and rank, counter_id equal to the sequence frame and
// consecutive per socket, wall_time > 0 exactly on pass messages; that
// sum_prefill_tokens over every pass message adds up to the prompt tokens
// sent, num_decode_requests to the tokens generated (max_tokens per
// request: the engine's snapshot counts a request in the pass that
// prefills it as a decode item too, as spec §1.6 and S14 describe, so
// every output token is one decode request-forward), and that heartbeats
// come back once the load is done.
func TestItem31_3ForwardPassMetrics(t *testing.T) {
	for _, tc := range []struct {
		name  string
		sets  []string
		ranks int // sockets
	}{
		{"2 workers", nil, 2},
		{"2 workers × 2 DP ranks", []string{"engine.workers.aggregated.parallelism.attention_data=2"}, 4},
		{"2 workers × 2 lock-step DP ranks", []string{"engine.workers.aggregated.parallelism.attention_data=2", "engine.semantics=mocker"}, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := freeBase(t, tc.ranks)
			s, hs := start(t, twoWorkers, Options{Speedup: 8, FPMPortBase: base, Inputs: sim.Inputs{Sets: tc.sets}})
			addrs := s.FPMAddrs()
			if len(addrs) != tc.ranks || addrs[0] != fmt.Sprintf("tcp://127.0.0.1:%d", base) {
				t.Fatalf("endpoints %v, want %d from port %d", addrs, tc.ranks, base)
			}
			ctx, cancel := patience.Context(t)
			defer cancel()
			msgs := make(chan fpmMsg, 1<<14)
			errs := make(chan error, len(addrs))
			for i, a := range addrs {
				sub := zmq4.NewSub(ctx)
				defer sub.Close()
				if err := sub.Dial(a); err != nil {
					t.Fatal(err)
				}
				if err := sub.SetOption(zmq4.OptionSubscribe, ""); err != nil {
					t.Fatal(err)
				}
				go func() {
					for {
						msg, err := sub.Recv()
						if err != nil {
							return
						}
						m, seq, err := decodeFPM(msg.Frames)
						if err != nil {
							errs <- fmt.Errorf("socket %d: %w", i, err)
							return
						}
						msgs <- fpmMsg{i, seq, m}
					}
				}()
			}
			var got []fpmMsg
			drain := func() {
				for {
					select {
					case m := <-msgs:
						got = append(got, m)
					case err := <-errs:
						t.Fatal(err)
					default:
						return
					}
				}
			}
			// heartbeats waits for a heartbeat on every socket after the
			// first from messages.
			heartbeats := func(what string, from int) {
				patience.Until(t, what, func() (bool, string) {
					drain()
					beat := make([]bool, len(addrs))
					for _, m := range got[from:] {
						if idle(m.m) {
							beat[m.sock] = true
						}
					}
					return !slices.Contains(beat, false), fmt.Sprintf("heartbeats per socket %v", beat)
				})
			}
			heartbeats("an idle heartbeat from every rank", 0)
			before := len(got)
			prompts, steps := 0, 0
			for i := range 6 {
				var sb bytes.Buffer
				n, out := 40+13*i, 3+i%3
				sb.WriteString(`{"prompt":[`)
				for j := range n {
					if j > 0 {
						sb.WriteByte(',')
					}
					fmt.Fprint(&sb, 100000*(i+1)+j)
				}
				fmt.Fprintf(&sb, `],"max_tokens":%d}`, out)
				resp := post(t, ctx, hs.URL+"/v1/completions", sb.String())
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					t.Fatalf("request %d: %d %s", i, resp.StatusCode, b)
				}
				prompts += n
				steps += out
			}
			var prefill, decode int
			patience.Until(t, "every pass published", func() (bool, string) {
				drain()
				prefill, decode = 0, 0
				for _, m := range got[before:] {
					prefill += m.m.ScheduledRequests.SumPrefillTokens
					decode += m.m.ScheduledRequests.NumDecodeRequests
				}
				return prefill >= prompts && decode >= steps, fmt.Sprintf("sum_prefill_tokens %d of %d, num_decode_requests %d of %d", prefill, prompts, decode, steps)
			})
			heartbeats("heartbeats again once idle", len(got))
			if prefill != prompts || decode != steps {
				t.Fatalf("sum_prefill_tokens %d, want the %d prompt tokens sent; num_decode_requests %d, want %d", prefill, prompts, decode, steps)
			}
			last := make([]int64, len(addrs))
			for i := range last {
				last[i] = -1
			}
			ranks := s.d.live.Worker(0).Ranks
			passes := 0
			for _, m := range got {
				w, r := m.sock/len(ranks), m.sock%len(ranks)
				if m.m.Version != 1 || m.m.WorkerID != strconv.Itoa(w) || m.m.DPRank != r {
					t.Fatalf("socket %d (worker %d, rank %d): %+v", m.sock, w, r, m.m)
				}
				if m.m.CounterID != m.seq || (last[m.sock] >= 0 && m.seq != uint64(last[m.sock]+1)) {
					t.Fatalf("socket %d: counter_id %d, seq %d after seq %d", m.sock, m.m.CounterID, m.seq, last[m.sock])
				}
				last[m.sock] = int64(m.seq)
				if !idle(m.m) {
					passes++
					if m.m.WallTime <= 0 {
						t.Fatalf("a pass message with wall_time %v: %+v", m.m.WallTime, m.m)
					}
				}
			}
			t.Logf("%d messages, %d of passes; %d prompt tokens, %d decode steps", len(got), passes, prompts, steps)
		})
	}
}
