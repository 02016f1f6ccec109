package workload

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/dynosim/dynosim-web/internal/idmap"
	"github.com/dynosim/dynosim-web/timing"
)

// row is one Mooncake JSONL line; numbers are kept raw so we can name the
// field that is wrong.
type row struct {
	Timestamp      json.RawMessage `json:"timestamp"`
	CreatedTime    json.RawMessage `json:"created_time"`
	InputLength    json.RawMessage `json:"input_length"`
	InputTokens    json.RawMessage `json:"input_tokens"`
	OutputLength   json.RawMessage `json:"output_length"`
	OutputTokens   json.RawMessage `json:"output_tokens"`
	OutputTokenIDs json.RawMessage `json:"output_token_ids"`
	HashIDs        json.RawMessage `json:"hash_ids"`
	SessionID      json.RawMessage `json:"session_id"`
	Delay          json.RawMessage `json:"delay"`
	DelayMs        json.RawMessage `json:"delay_ms"`
}

// numbers decodes a JSON array of numbers, keeping their literals.
func numbers(raw json.RawMessage) ([]json.Number, error) {
	var out []json.Number
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("must be a list of numbers")
	}
	return out, nil
}

// number returns a JSON number literal; null or absent give "".
func number(raw json.RawMessage) (json.Number, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	if c := raw[0]; c != '-' && (c < '0' || c > '9') {
		return "", fmt.Errorf("must be a number, got %s", clip(string(raw)))
	}
	return json.Number(raw), nil
}

// maxLine bounds one trace line (64 MiB).
const maxLine = 64 << 20

// MaxRequestTokens bounds the prompt and the output length of one request
// (16 Mi tokens): far past any model's context, small enough that sums over
// a request never overflow.
const MaxRequestTokens = 16 << 20

// ReadMooncake parses a Mooncake JSONL trace (spec §8.2). traceBlock is the
// number of tokens per hash id (512 for the public traces). Errors name the
// file and line.
func ReadMooncake(name string, data []byte, traceBlock int) (*Workload, error) {
	if traceBlock < 1 {
		return nil, fmt.Errorf("traffic.source.block_size: must be ≥ 1, got %d", traceBlock)
	}
	if err := checkEncoding(name, data); err != nil {
		return nil, err
	}
	w := &Workload{Name: name, TraceBlock: traceBlock, Timestamps: true}
	intern := idmap.New(0)           // trace hash id → token id
	sessions := make(map[string]int) // session id (raw JSON) → index in w.Sessions
	last := make(map[int]float64)    // session index → previous timestamp
	sum := make(map[int]timing.Time) // session index → its delays so far
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	line := 0
	var (
		numBuf [][]byte
		arena  idArena
		r      row
	)
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		fail := func(format string, a ...any) error {
			return fmt.Errorf("%s:%d: %s", name, line, fmt.Sprintf(format, a...))
		}
		r = row{}
		if !scanRow(b, &r) {
			r = row{}
			if err := json.Unmarshal(b, &r); err != nil {
				var te *json.UnmarshalTypeError
				if errors.As(err, &te) && te.Field != "" {
					return nil, fail("%s: wrong type (%s)", te.Field, te.Value)
				}
				return nil, fail("invalid JSON: %v", err)
			}
		}
		if len(r.HashIDs) == 0 || string(r.HashIDs) == "null" {
			return nil, fail("hash_ids: missing")
		}
		hashIDs, ok := scanNumbers(r.HashIDs, numBuf)
		if !ok {
			nums, err := numbers(r.HashIDs)
			if err != nil {
				return nil, fail("hash_ids: %v", err)
			}
			hashIDs = hashIDs[:0]
			for _, n := range nums {
				hashIDs = append(hashIDs, []byte(n))
			}
		}
		numBuf = hashIDs
		blocks := arena.take(len(hashIDs))
		for i, h := range hashIDs {
			v, ok := parseUint(h)
			if !ok {
				return nil, fail("hash_ids[%d]: must be an integer ≥ 0, got %s", i, h)
			}
			id, _ := intern.GetOrPut(v, int32(intern.Len()))
			blocks[i] = uint32(id)
		}
		capacity := len(blocks) * traceBlock
		inNum, err := number(first(r.InputLength, r.InputTokens))
		if err != nil {
			return nil, fail("input_length: %v", err)
		}
		in, err := intField(inNum, capacity)
		if err != nil {
			return nil, fail("input_length: %v", err)
		}
		in = min(in, capacity) // the trace's length may exceed its hashed part
		outNum, err := number(first(r.OutputLength, r.OutputTokens))
		if err != nil {
			return nil, fail("output_length: %v", err)
		}
		if outNum == "" {
			return nil, fail("output_length: missing")
		}
		out, err := intField(outNum, 0)
		if err != nil {
			return nil, fail("output_length: %v", err)
		}
		t := Turn{Input: in, Output: out, Blocks: blocks}
		if len(r.OutputTokenIDs) > 0 && string(r.OutputTokenIDs) != "null" {
			ids, err := numbers(r.OutputTokenIDs)
			if err != nil {
				return nil, fail("output_token_ids: %v", err)
			}
			if len(ids) != out {
				return nil, fail("output_token_ids: length %d, want output_length %d", len(ids), out)
			}
			t.Planned = make([]uint32, out)
			for i, x := range ids {
				v, err := strconv.ParseUint(x.String(), 10, 32)
				if err != nil {
					return nil, fail("output_token_ids[%d]: must be a uint32, got %s", i, x)
				}
				t.Planned[i] = uint32(v)
			}
		}
		tsNum, err := number(first(r.Timestamp, r.CreatedTime))
		if err != nil {
			return nil, fail("timestamp: %v", err)
		}
		ts, hasTS := 0.0, tsNum != ""
		if hasTS {
			if ts, err = floatField(tsNum); err != nil {
				return nil, fail("timestamp: %v", err)
			}
		}
		delayNum, err := number(first(r.Delay, r.DelayMs))
		if err != nil {
			return nil, fail("delay: %v", err)
		}
		delay, hasDelay := 0.0, delayNum != ""
		if hasDelay {
			if delay, err = floatField(delayNum); err != nil {
				return nil, fail("delay: %v", err)
			}
		}

		// A row without session_id is a session of its own.
		si, seen := 0, false
		hasSession := len(r.SessionID) > 0 && string(r.SessionID) != "null"
		if hasSession {
			si, seen = sessions[string(r.SessionID)]
		}
		if !seen {
			if hasDelay && delay != 0 {
				return nil, fail("delay: must be absent or 0 on a session's first turn")
			}
			if !hasTS {
				return nil, fail("timestamp: missing on a session's first turn")
			}
			si = len(w.Sessions)
			if hasSession {
				sessions[string(r.SessionID)] = si
			}
			w.Sessions = append(w.Sessions, Session{Start: timing.FromMs(ts)})
		} else {
			switch {
			case hasDelay:
			case hasTS:
				delay = ts - last[si]
				if delay < 0 {
					return nil, fail("timestamp: earlier than the session's previous turn")
				}
			}
			t.Delay = timing.FromMs(delay)
			if sum[si] += t.Delay; sum[si] > timing.Horizon {
				return nil, fail("delay: the session's delays add up past 100 years of virtual time")
			}
		}
		if hasTS {
			last[si] = ts
		}
		w.Sessions[si].Turns = append(w.Sessions[si].Turns, t)
	}
	if err := sc.Err(); err != nil {
		return nil, scanErr(name, line+1, err)
	}
	if len(w.Sessions) == 0 {
		return nil, fmt.Errorf("%s: empty trace", name)
	}
	w.ids = intern.Len()
	w.normalize()
	return w, nil
}

func first(a, b json.RawMessage) json.RawMessage {
	if len(a) > 0 {
		return a
	}
	return b
}

// intField parses a non-negative integer; empty means def.
func intField(n json.Number, def int) (int, error) {
	if n == "" {
		return def, nil
	}
	v, err := strconv.ParseInt(n.String(), 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("must be an integer ≥ 0, got %s", n)
	}
	if v > MaxRequestTokens {
		return 0, fmt.Errorf("must be ≤ %d (MaxRequestTokens), got %s", MaxRequestTokens, n)
	}
	return int(v), nil
}

func floatField(n json.Number) (float64, error) {
	v, err := strconv.ParseFloat(n.String(), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return 0, fmt.Errorf("must be a finite number ≥ 0, got %s", n)
	}
	if v > timing.HorizonMs {
		return 0, fmt.Errorf("must be ≤ %.0f ms (100 years of virtual time), got %s", timing.HorizonMs, n)
	}
	return v, nil
}

// normalize makes the first arrival time 0, records the start order and
// numbers the turns. Sessions stay in file order: load modes that ignore
// timestamps (concurrency) release them in that order.
func (w *Workload) normalize() {
	t0 := w.Sessions[0].Start
	for i := range w.Sessions {
		t0 = min(t0, w.Sessions[i].Start)
	}
	for i := range w.Sessions {
		w.Sessions[i].Start -= t0
	}
	w.order()
	w.number()
}

// order records ByStart: session indices by first arrival, file order
// breaking ties.
func (w *Workload) order() {
	w.ByStart = w.ByStart[:0]
	sorted := true
	for i := range w.Sessions {
		w.ByStart = append(w.ByStart, int32(i))
		sorted = sorted && (i == 0 || w.Sessions[i-1].Start <= w.Sessions[i].Start)
	}
	if sorted {
		return
	}
	slices.SortStableFunc(w.ByStart, func(a, b int32) int {
		return cmp.Compare(w.Sessions[a].Start, w.Sessions[b].Start)
	})
}

// Scale is a trace time or delay t under arrival speedup ratio (> 0):
// t / ratio, to the nearest nanosecond (spec §8.4). The replay applies it
// as it releases requests, so one loaded workload serves every speedup.
func Scale(t timing.Time, ratio float64) timing.Time {
	if ratio == 1 {
		return t
	}
	return timing.FromNs(float64(t) / ratio) // saturates at timing.Horizon
}
