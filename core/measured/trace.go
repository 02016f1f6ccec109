package measured

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/dynosim/dynosim-web/core/report/schema"
	"github.com/dynosim/dynosim-web/core/workload"
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
//
// The trace is bounded like a trace read: at most workload.MaxTraceBytes
// (the largest trace file dynosim reads), checked before a byte is
// written, so a summary claiming millions of requests of millions of
// tokens is refused, naming its fields, instead of building a terabyte.
func (r *Run) Trace() ([]byte, error) {
	rows, err := r.traceRows()
	if err != nil {
		return nil, err
	}
	size, err := rows.size(r)
	if err != nil {
		return nil, err
	}
	b := bytes.NewBuffer(make([]byte, 0, size))
	if err := rows.write(b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// TraceSize is the length in bytes of the trace Trace returns, computed
// without building it (the page keeps only a trace it can replay).
func (r *Run) TraceSize() (int64, error) {
	rows, err := r.traceRows()
	if err != nil {
		return 0, err
	}
	return rows.size(r)
}

// WriteTrace writes the trace Trace returns to w row by row (a row is
// made, written and dropped), after checking its size, and returns the
// number of requests written. A summary-only result's requests are made
// one at a time, never held as a list.
func (r *Run) WriteTrace(w io.Writer) (int, error) {
	rows, err := r.traceRows()
	if err != nil {
		return 0, err
	}
	if _, err := rows.size(r); err != nil {
		return 0, err
	}
	return rows.n, rows.write(w)
}

// traceRows are the requests of a trace: n of them, request i being
// at(i).
type traceRows struct {
	n       int
	at      func(i int) Request
	summary bool // made from a summary-only result's totals
}

// traceRows are the per-request records, or for a summary-only vLLM
// result its request count of mean-length requests.
func (r *Run) traceRows() (traceRows, error) {
	if len(r.Requests) > 0 {
		return traceRows{n: len(r.Requests), at: func(i int) Request { return r.Requests[i] }}, nil
	}
	n, in, out := r.Summary[schema.CompletedRequests], r.Summary[schema.TotalInputTokens], r.Summary[schema.TotalOutputTokens]
	if r.Tool != ToolVLLM {
		return traceRows{}, fmt.Errorf("%s: no per-request records: the trace needs AIPerf's profile_export.jsonl (in the artifact directory beside profile_export_aiperf.json; --export-level records or raw)", files(r))
	}
	if !(n >= 1) || !(in >= 0) || !(out >= 0) {
		return traceRows{}, fmt.Errorf("%s: no per-request records and no completed, total_input_tokens and total_output_tokens to stand for them: run vllm bench serve with --save-result --save-detailed", files(r))
	}
	// Every row takes at least minTraceRow bytes: a count past the trace
	// limit's worth of them is refused before it is even a number of
	// rows (and before an int of it could wrap).
	if n > workload.MaxTraceBytes/minTraceRow {
		return traceRows{}, fmt.Errorf("%s: completed: %.0f requests make a trace of more than %d bytes (workload.MaxTraceBytes, the largest trace dynosim reads; a request is a line of at least %d bytes)", files(r), n, int64(workload.MaxTraceBytes), minTraceRow)
	}
	for _, t := range []struct {
		key   string
		total float64
	}{{"total_input_tokens", in}, {"total_output_tokens", out}} {
		if t.total/n > workload.MaxRequestTokens {
			return traceRows{}, fmt.Errorf("%s: %s / completed: %.0f tokens a request, more than %d (workload.MaxRequestTokens, the most a trace request may have)", files(r), t.key, t.total/n, workload.MaxRequestTokens)
		}
	}
	q := Request{InputTokens: int(math.Round(in / n)), OutputTokens: int(math.Round(out / n)), TTFTMs: math.NaN(), ITLMs: math.NaN(), E2EMs: math.NaN()}
	return traceRows{n: int(n), summary: true, at: func(i int) Request {
		q := q
		q.StartMs = r.arrival(i)
		return q
	}}, nil
}

// minTraceRow is the length of the shortest row of a trace,
// {"timestamp":0,"input_length":0,"output_length":0,"hash_ids":[]} and
// its newline.
const minTraceRow = 65

// size is the trace's length in bytes, computed row by row without
// writing it (each row's hash ids by arithmetic), or an error naming
// what makes it pass workload.MaxTraceBytes.
func (rows traceRows) size(r *Run) (int64, error) {
	var size int64
	var next uint64
	var head []byte
	for i := range rows.n {
		q := rows.at(i)
		head = appendRowHead(head[:0], q)
		k := blocksOf(q.InputTokens)
		size += int64(len(head)) + idsLen(next, k) + int64(len("]}\n"))
		next += k
		if size <= workload.MaxTraceBytes {
			continue
		}
		if rows.summary {
			return 0, fmt.Errorf("%s: completed (%d requests) × total_input_tokens / completed (%d prompt tokens, %d hash ids a request): the trace passes %d bytes (workload.MaxTraceBytes, the largest trace dynosim reads) at request %d", files(r), rows.n, q.InputTokens, k, int64(workload.MaxTraceBytes), i+1)
		}
		return 0, fmt.Errorf("%s: the trace of its %d requests passes %d bytes (workload.MaxTraceBytes, the largest trace dynosim reads) at request %d (%d prompt tokens, %d hash ids)", files(r), rows.n, int64(workload.MaxTraceBytes), i+1, q.InputTokens, k)
	}
	return size, nil
}

// write writes the rows to w, each as soon as it is made.
func (rows traceRows) write(w io.Writer) error {
	var line []byte
	var next uint64
	for i := range rows.n {
		q := rows.at(i)
		line = appendRowHead(line[:0], q)
		for j := range blocksOf(q.InputTokens) {
			if j > 0 {
				line = append(line, ',')
			}
			line = strconv.AppendUint(line, next, 10)
			next++
		}
		line = append(line, "]}\n"...)
		if _, err := w.Write(line); err != nil {
			return err
		}
	}
	return nil
}

// appendRowHead appends a row up to its hash ids' opening bracket.
func appendRowHead(b []byte, q Request) []byte {
	b = append(b, `{"timestamp":`...)
	b = strconv.AppendFloat(b, math.Round(q.StartMs*1e6)/1e6, 'f', -1, 64) // to the ns, as the reader keeps it
	b = append(b, `,"input_length":`...)
	b = strconv.AppendInt(b, int64(q.InputTokens), 10)
	b = append(b, `,"output_length":`...)
	b = strconv.AppendInt(b, int64(q.OutputTokens), 10)
	return append(b, `,"hash_ids":[`...)
}

// blocksOf is the number of hash ids of a prompt of n tokens.
func blocksOf(n int) uint64 { return uint64(n+TraceBlock-1) / TraceBlock }

// idsLen is the length of the ids from, from+1, …, from+k−1 written in
// decimal and separated by commas.
func idsLen(from, k uint64) int64 {
	if k == 0 {
		return 0
	}
	n := int64(k - 1) // the commas
	end := from + k
	for digits, hi := int64(1), uint64(10); from < end; digits, hi = digits+1, hi*10 {
		if from < hi {
			top := min(end, hi)
			n += digits * int64(top-from)
			from = top
		}
	}
	return n
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
