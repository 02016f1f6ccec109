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
	Priority       json.RawMessage `json:"priority"`
	StrictPriority json.RawMessage `json:"strict_priority"`
	PolicyClass    json.RawMessage `json:"policy_class"`
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
	m := &mooncakeReader{
		name:       name,
		traceBlock: traceBlock,
		w:          &Workload{Name: name, TraceBlock: traceBlock, Timestamps: true},
		sessions:   make(map[string]int),
		last:       make(map[int]float64),
		sum:        make(map[int]timing.Time),
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	for sc.Scan() {
		m.line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		if err := m.readLine(b); err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		return nil, scanErr(name, m.line+1, err)
	}
	w := m.w
	if len(w.Sessions) == 0 {
		return nil, fmt.Errorf("%s: empty trace", name)
	}
	w.ids = m.intern.Len()
	w.normalize()
	return w, nil
}

// mooncakeReader is what ReadMooncake carries from one line to the next:
// the interned hash ids, the sessions seen so far and reused buffers.
type mooncakeReader struct {
	name       string
	traceBlock int
	line       int
	w          *Workload
	intern     interner            // trace hash id → token id
	sessions   map[string]int      // session id (raw JSON) → index in w.Sessions
	last       map[int]float64     // session index → previous timestamp
	sum        map[int]timing.Time // session index → its delays so far
	numBuf     [][]byte
	arena      idArena
	r          row
}

// fail is an error naming the file and the current line.
func (m *mooncakeReader) fail(format string, a ...any) error {
	return fmt.Errorf("%s:%d: %s", m.name, m.line, fmt.Sprintf(format, a...))
}

// readLine parses one non-blank line and appends its turn to its session.
func (m *mooncakeReader) readLine(b []byte) error {
	if err := m.decode(b); err != nil {
		return err
	}
	r := &m.r
	blocks, err := m.blocks()
	if err != nil {
		return err
	}
	t, err := m.turn(blocks)
	if err != nil {
		return err
	}
	tsNum, err := number(first(r.Timestamp, r.CreatedTime))
	if err != nil {
		return m.fail("timestamp: %v", err)
	}
	ts, hasTS := 0.0, tsNum != ""
	if hasTS {
		if ts, err = floatField(tsNum); err != nil {
			return m.fail("timestamp: %v", err)
		}
	}
	delayNum, err := number(first(r.Delay, r.DelayMs))
	if err != nil {
		return m.fail("delay: %v", err)
	}
	delay, hasDelay := 0.0, delayNum != ""
	if hasDelay {
		if delay, err = floatField(delayNum); err != nil {
			return m.fail("delay: %v", err)
		}
	}
	return m.place(t, ts, hasTS, delay, hasDelay)
}

// decode fills m.r from one line: the fast scanner first, encoding/json
// when the line is beyond it (and to word the error).
func (m *mooncakeReader) decode(b []byte) error {
	m.r = row{}
	if scanRow(b, &m.r) {
		return nil
	}
	m.r = row{}
	if err := json.Unmarshal(b, &m.r); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return m.fail("%s: wrong type (%s)", te.Field, te.Value)
		}
		return m.fail("invalid JSON: %v", err)
	}
	return nil
}

// blocks interns the row's hash ids into token ids.
func (m *mooncakeReader) blocks() ([]uint32, error) {
	r := &m.r
	if len(r.HashIDs) == 0 || string(r.HashIDs) == "null" {
		return nil, m.fail("hash_ids: missing")
	}
	hashIDs, ok := scanNumbers(r.HashIDs, m.numBuf)
	if !ok {
		nums, err := numbers(r.HashIDs)
		if err != nil {
			return nil, m.fail("hash_ids: %v", err)
		}
		hashIDs = hashIDs[:0]
		for _, n := range nums {
			hashIDs = append(hashIDs, []byte(n))
		}
	}
	m.numBuf = hashIDs
	blocks := m.arena.take(len(hashIDs))
	for i, h := range hashIDs {
		v, ok := parseUint(h)
		if !ok {
			return nil, m.fail("hash_ids[%d]: must be an integer ≥ 0, got %s", i, h)
		}
		blocks[i] = m.intern.id(v)
	}
	return blocks, nil
}

// turn reads the row's lengths and planned output tokens.
func (m *mooncakeReader) turn(blocks []uint32) (Turn, error) {
	r := &m.r
	capacity := len(blocks) * m.traceBlock
	inNum, err := number(first(r.InputLength, r.InputTokens))
	if err != nil {
		return Turn{}, m.fail("input_length: %v", err)
	}
	in, err := intField(inNum, capacity)
	if err != nil {
		return Turn{}, m.fail("input_length: %v", err)
	}
	in = min(in, capacity) // the trace's length may exceed its hashed part
	outNum, err := number(first(r.OutputLength, r.OutputTokens))
	if err != nil {
		return Turn{}, m.fail("output_length: %v", err)
	}
	if outNum == "" {
		return Turn{}, m.fail("output_length: missing")
	}
	out, err := intField(outNum, 0)
	if err != nil {
		return Turn{}, m.fail("output_length: %v", err)
	}
	t := Turn{Input: in, Output: out, Blocks: blocks}
	if err := m.priorities(&t); err != nil {
		return Turn{}, err
	}
	if len(r.OutputTokenIDs) > 0 && string(r.OutputTokenIDs) != "null" {
		if t.Planned, err = m.planned(out); err != nil {
			return Turn{}, err
		}
	}
	return t, nil
}

// planned reads output_token_ids, which must hold out uint32s.
func (m *mooncakeReader) planned(out int) ([]uint32, error) {
	ids, err := numbers(m.r.OutputTokenIDs)
	if err != nil {
		return nil, m.fail("output_token_ids: %v", err)
	}
	if len(ids) != out {
		return nil, m.fail("output_token_ids: length %d, want output_length %d", len(ids), out)
	}
	planned := make([]uint32, out)
	for i, x := range ids {
		v, err := strconv.ParseUint(x.String(), 10, 32)
		if err != nil {
			return nil, m.fail("output_token_ids[%d]: must be a uint32, got %s", i, x)
		}
		planned[i] = uint32(v)
	}
	return planned, nil
}

// place appends turn t to its session, opening a new session on its first
// turn and deriving the delay from timestamps on later ones.
func (m *mooncakeReader) place(t Turn, ts float64, hasTS bool, delay float64, hasDelay bool) error {
	r, w := &m.r, m.w
	// A row without session_id is a session of its own.
	si, seen := 0, false
	hasSession := len(r.SessionID) > 0 && string(r.SessionID) != "null"
	if hasSession {
		si, seen = m.sessions[string(r.SessionID)]
	}
	if !seen {
		if hasDelay && delay != 0 {
			return m.fail("delay: must be absent or 0 on a session's first turn")
		}
		if !hasTS {
			return m.fail("timestamp: missing on a session's first turn")
		}
		si = len(w.Sessions)
		if hasSession {
			m.sessions[string(r.SessionID)] = si
		}
		w.Sessions = append(w.Sessions, Session{Start: timing.FromMs(ts)})
	} else {
		switch {
		case hasDelay:
		case hasTS:
			delay = ts - m.last[si]
			if delay < 0 {
				return m.fail("timestamp: earlier than the session's previous turn")
			}
		}
		t.Delay = timing.FromMs(delay)
		if m.sum[si] += t.Delay; m.sum[si] > timing.Horizon {
			return m.fail("delay: the session's delays add up past 100 years of virtual time")
		}
	}
	if hasTS {
		m.last[si] = ts
	}
	w.Sessions[si].Turns = append(w.Sessions[si].Turns, t)
	return nil
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
