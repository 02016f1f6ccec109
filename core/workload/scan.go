package workload

import "encoding/json"

// A hand-written scanner for the flat objects of Mooncake traces. Replays in
// the browser spend much of their parse time in encoding/json's reflection;
// this fast path handles the common shape (string keys without escapes;
// numbers, flat arrays of numbers, plain strings, true/false/null) with no
// allocation beyond the hash-id slice, and reports ok=false on anything else
// so encoding/json decides, with its error messages. FuzzScanRow checks that
// whatever it accepts, encoding/json reads the same way.

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// scanNumber returns the end of the JSON number literal at b[i:], or -1.
func scanNumber(b []byte, i int) int {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		i++
		j := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == j {
			return -1
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == j {
			return -1
		}
	}
	return i
}

// scanString returns the end (after the closing quote) of a JSON string
// without escapes or control characters at b[i:], or -1.
func scanString(b []byte, i int) int {
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	for i++; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i + 1
		case c == '\\' || c < 0x20 || c >= 0x80:
			return -1 // escapes and non-ASCII: leave them to encoding/json
		}
	}
	return -1
}

func scanLiteral(b []byte, i int, lit string) int {
	if len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit {
		return i + len(lit)
	}
	return -1
}

// scanScalar returns the end of a number, plain string, true, false or null.
func scanScalar(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return scanString(b, i)
	case 't':
		return scanLiteral(b, i, "true")
	case 'f':
		return scanLiteral(b, i, "false")
	case 'n':
		return scanLiteral(b, i, "null")
	}
	return scanNumber(b, i)
}

// scanArray returns the end of a flat array of scalars, or -1.
func scanArray(b []byte, i int) int {
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1
	}
	for {
		if i = scanScalar(b, i); i < 0 {
			return -1
		}
		i = skipSpace(b, i)
		if i >= len(b) {
			return -1
		}
		switch b[i] {
		case ']':
			return i + 1
		case ',':
			i = skipSpace(b, i+1)
		default:
			return -1
		}
	}
}

// scanRow fills r from a flat JSON object. Values alias b.
func scanRow(b []byte, r *row) bool {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return skipSpace(b, i+1) == len(b)
	}
	for {
		end := scanString(b, i)
		if end < 0 {
			return false
		}
		key := b[i+1 : end-1]
		i = skipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		i = skipSpace(b, i+1)
		start := i
		if i < len(b) && b[i] == '[' {
			i = scanArray(b, i)
		} else {
			i = scanScalar(b, i)
		}
		if i < 0 {
			return false
		}
		if f := r.field(key); f != nil {
			*f = json.RawMessage(b[start:i])
		} else if fieldFold(key) {
			return false // a case variant of a known key: encoding/json matches those
		}
		i = skipSpace(b, i)
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case '}':
			return skipSpace(b, i+1) == len(b)
		case ',':
			i = skipSpace(b, i+1)
		default:
			return false
		}
	}
}

// rowFields maps the keys of row to its fields, as encoding/json matches them.
var rowFields = []struct {
	key string
	get func(*row) *json.RawMessage
}{
	{"timestamp", func(r *row) *json.RawMessage { return &r.Timestamp }},
	{"created_time", func(r *row) *json.RawMessage { return &r.CreatedTime }},
	{"input_length", func(r *row) *json.RawMessage { return &r.InputLength }},
	{"input_tokens", func(r *row) *json.RawMessage { return &r.InputTokens }},
	{"output_length", func(r *row) *json.RawMessage { return &r.OutputLength }},
	{"output_tokens", func(r *row) *json.RawMessage { return &r.OutputTokens }},
	{"output_token_ids", func(r *row) *json.RawMessage { return &r.OutputTokenIDs }},
	{"hash_ids", func(r *row) *json.RawMessage { return &r.HashIDs }},
	{"session_id", func(r *row) *json.RawMessage { return &r.SessionID }},
	{"delay", func(r *row) *json.RawMessage { return &r.Delay }},
	{"delay_ms", func(r *row) *json.RawMessage { return &r.DelayMs }},
	{"priority", func(r *row) *json.RawMessage { return &r.Priority }},
	{"strict_priority", func(r *row) *json.RawMessage { return &r.StrictPriority }},
	{"policy_class", func(r *row) *json.RawMessage { return &r.PolicyClass }},
}

func (r *row) field(key []byte) *json.RawMessage {
	for _, f := range rowFields {
		if f.key == string(key) {
			return f.get(r)
		}
	}
	return nil
}

// fieldFold reports whether key equals a row key ignoring ASCII case.
func fieldFold(key []byte) bool {
	for _, f := range rowFields {
		k := f.key
		if len(k) != len(key) {
			continue
		}
		same := true
		for j := range key {
			c := key[j]
			if c >= 'A' && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != k[j] {
				same = false
				break
			}
		}
		if same {
			return true
		}
	}
	return false
}

// scanNumbers splits a flat array of numbers into literals aliasing raw;
// ok=false leaves it to encoding/json.
func scanNumbers(raw []byte, dst [][]byte) ([][]byte, bool) {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '[' {
		return nil, false
	}
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == ']' {
		return dst[:0], skipSpace(raw, i+1) == len(raw)
	}
	out := dst[:0]
	for {
		end := scanNumber(raw, i)
		if end < 0 {
			return nil, false
		}
		out = append(out, raw[i:end])
		i = skipSpace(raw, end)
		if i >= len(raw) {
			return nil, false
		}
		switch raw[i] {
		case ']':
			return out, skipSpace(raw, i+1) == len(raw)
		case ',':
			i = skipSpace(raw, i+1)
		default:
			return nil, false
		}
	}
}

// parseUint parses a plain decimal literal (digits only) into a uint64.
func parseUint(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (1<<64-1-d)/10 {
			return 0, false // overflow
		}
		v = v*10 + d
	}
	return v, true
}

// idArena hands out interned-id slices from large shared chunks: a trace's
// rows then cost a handful of allocations, not one each.
type idArena struct{ chunk []uint32 }

func (a *idArena) take(n int) []uint32 {
	if n > len(a.chunk) {
		a.chunk = make([]uint32, max(n, 1<<16))
	}
	out := a.chunk[:n:n]
	a.chunk = a.chunk[n:]
	return out
}
