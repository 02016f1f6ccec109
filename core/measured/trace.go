package measured

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/dynosim/dynosim-web/core/report/schema"
)

// TraceBlock is the number of prompt tokens one hash id of the written
// trace stands for: 512, the public Mooncake traces' block and the
// default traffic.source.block_size. Replay the trace with that block
// size: the reader caps a prompt at hash ids × block size.
const TraceBlock = 512

// Trace turns the per-request records into a trace the simulator replays: Mooncake JSONL (one line per request: timestamp in ms relative to the first request, input_length, output_length, hash_ids) — read core/workload/mooncake.go for the exact format and make sure `dynosim predict --trace` accepts it. Requests share no prefix (benchmark prompts are random) unless you find the export records otherwise; say what you chose in a comment. An error if the run has no per-request records (say what file would have them).
//
// Choice: every request gets hash ids of its own, so no two share a
// prefix block. Neither export records prompt contents or prefix
// structure: AIPerf's synthetic prompts and vLLM's random dataset are
// random tokens, and a shared prefix (vLLM --random-prefix-len, AIPerf
// prefix prompts) is a benchmark option the result does not keep. The
// prediction therefore has no prefix-cache reuse; if the benchmark had
// some, its measured TTFT will be lower than predicted.
//
// Arrivals are the measured request start times (AIPerf's
// request_start_ns, vLLM's start_times); see parseVLLMDetail for vLLM
// results without them.
//
// A vLLM result saved without --save-detailed keeps only the request
// count, the token totals and the offered rate: its trace is that many
// requests of the mean prompt and output lengths, arriving as Arrivals
// says. For vLLM's random dataset (every prompt the same length unless
// --random-range-ratio spreads them) that is the benchmark's workload;
// for others it is its average, and TraceNote says so.
func (r *Run) Trace() ([]byte, error) {
	reqs := r.Requests
	if len(reqs) == 0 {
		var err error
		if reqs, err = r.summaryRequests(); err != nil {
			return nil, err
		}
	}
	var b bytes.Buffer
	next := uint64(0)
	for _, q := range reqs {
		b.WriteString(`{"timestamp":`)
		b.WriteString(strconv.FormatFloat(math.Round(q.StartMs*1e6)/1e6, 'f', -1, 64)) // to the ns, as the reader keeps it
		b.WriteString(`,"input_length":`)
		b.WriteString(strconv.Itoa(q.InputTokens))
		b.WriteString(`,"output_length":`)
		b.WriteString(strconv.Itoa(q.OutputTokens))
		b.WriteString(`,"hash_ids":[`)
		for i := range (q.InputTokens + TraceBlock - 1) / TraceBlock {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.FormatUint(next, 10))
			next++
		}
		b.WriteString("]}\n")
	}
	return b.Bytes(), nil
}

// summaryRequests stands for a summary-only vLLM result's requests.
func (r *Run) summaryRequests() ([]Request, error) {
	n, in, out := r.Summary[schema.CompletedRequests], r.Summary[schema.TotalInputTokens], r.Summary[schema.TotalOutputTokens]
	if r.Tool != ToolVLLM {
		return nil, fmt.Errorf("%s: no per-request records: the trace needs AIPerf's profile_export.jsonl (in the artifact directory beside profile_export_aiperf.json; --export-level records or raw)", files(r))
	}
	if !(n >= 1 && n <= maxRequests) || !(in >= 0 && in/n <= maxTokens) || !(out >= 0 && out/n <= maxTokens) {
		return nil, fmt.Errorf("%s: no per-request records and no completed, total_input_tokens and total_output_tokens to stand for them: run vllm bench serve with --save-result --save-detailed", files(r))
	}
	reqs := make([]Request, int(n))
	for i := range reqs {
		reqs[i] = Request{StartMs: r.arrival(i), InputTokens: int(math.Round(in / n)), OutputTokens: int(math.Round(out / n)), TTFTMs: math.NaN(), ITLMs: math.NaN(), E2EMs: math.NaN()}
	}
	return reqs, nil
}

// arrival places request i of a vLLM result without start_times: evenly
// at its request rate (vLLM drew Poisson or gamma gaps with that mean and a
// seed we cannot replay), or at 0 for rate inf.
func (r *Run) arrival(i int) float64 {
	if r.rate > 0 {
		return float64(i) * 1000 / r.rate
	}
	return 0
}

// TraceNote says what Trace had to assume, "" when the run recorded it
// all: arrivals of a vLLM result without start_times, lengths of a
// summary-only one, and how to replay a closed-loop (--max-concurrency)
// run.
func (r *Run) TraceNote() string {
	if r.Tool != ToolVLLM || r.startTimes {
		return ""
	}
	var notes []string
	if len(r.Requests) == 0 {
		notes = append(notes, "the result has no per-request lists (no --save-detailed): every request has the mean prompt and output lengths")
	}
	if r.rate > 0 {
		notes = append(notes, fmt.Sprintf("the result has no start_times (vLLM before 2026-01): arrivals are evenly spaced at its request rate, %g/s (vLLM drew random gaps with that mean)", r.rate))
	} else {
		notes = append(notes, "the result has no start_times (vLLM before 2026-01) and its request rate is inf: every request arrives at 0 ms")
	}
	if c := r.concurrency; c > 0 {
		notes = append(notes, fmt.Sprintf("the run was closed-loop with --max-concurrency %d: replay with --set traffic.load.type=concurrency --set traffic.load.concurrency=%d", c, c))
	}
	return strings.Join(notes, "; ")
}

func files(r *Run) string {
	if len(r.Files) == 1 {
		return r.Files[0]
	}
	s := ""
	for i, f := range r.Files {
		if i > 0 {
			s += ", "
		}
		s += f
	}
	return s
}
