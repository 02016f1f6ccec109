package measured

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
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
func (r *Run) Trace() ([]byte, error) {
	if len(r.Requests) == 0 {
		switch r.Tool {
		case ToolVLLM:
			return nil, fmt.Errorf("%s: no per-request records: run vllm bench serve with --save-result --save-detailed to save input_lens, output_lens, ttfts and itls", files(r))
		default:
			return nil, fmt.Errorf("%s: no per-request records: the trace needs AIPerf's profile_export.jsonl (in the artifact directory beside profile_export_aiperf.json; --export-level records or raw)", files(r))
		}
	}
	var b bytes.Buffer
	next := uint64(0)
	for _, q := range r.Requests {
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
