package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// The per-request records of a whole trace are 12,031 lines, 7.4 MB of
// JSONL. Decoding each line into a map[string]json.RawMessage with
// encoding/json took 5.6 s of the page's main thread under wasm (issue 32
// item 8). The records are flat objects (numbers, strings, null, booleans)
// plus one object of numbers (ttft_breakdown_ms), so a scanner that cuts a
// line into its keys and raw values, and a cell that is a substring of the
// whole text, do the same work without reflection or a map per line.
// Anything else (escapes, nested arrays) falls back to encoding/json for that
// value, and invalid JSON is an error as before.

// jsonField is one key of a record and its raw value (a substring).
type jsonField struct{ key, raw string }

// scanObject cuts a JSON object into its fields, in document order,
// appending them to fields[:0]. It checks the syntax of everything it
// skips.
func scanObject(s string, fields []jsonField) ([]jsonField, error) {
	fields = fields[:0]
	i := skipWS(s, 0)
	if i >= len(s) || s[i] != '{' {
		return nil, fmt.Errorf("want an object")
	}
	i = skipWS(s, i+1)
	if i < len(s) && s[i] == '}' {
		return fields, trailing(s, i+1)
	}
	for {
		if i >= len(s) || s[i] != '"' {
			return nil, fmt.Errorf("want a key at offset %d", i)
		}
		end, err := skipString(s, i)
		if err != nil {
			return nil, err
		}
		key := s[i+1 : end-1]
		if strings.IndexByte(key, '\\') >= 0 {
			if err := json.Unmarshal([]byte(s[i:end]), &key); err != nil {
				return nil, err
			}
		}
		i = skipWS(s, end)
		if i >= len(s) || s[i] != ':' {
			return nil, fmt.Errorf("want ':' at offset %d", i)
		}
		i = skipWS(s, i+1)
		vend, err := skipValue(s, i)
		if err != nil {
			return nil, err
		}
		fields = append(fields, jsonField{key, s[i:vend]})
		i = skipWS(s, vend)
		if i < len(s) && s[i] == ',' {
			i = skipWS(s, i+1)
			continue
		}
		if i < len(s) && s[i] == '}' {
			return fields, trailing(s, i+1)
		}
		return nil, fmt.Errorf("want ',' or '}' at offset %d", i)
	}
}

func trailing(s string, i int) error {
	if i = skipWS(s, i); i != len(s) {
		return fmt.Errorf("text after the object at offset %d", i)
	}
	return nil
}

func skipWS(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n') {
		i++
	}
	return i
}

// skipString returns the offset after the string that starts at s[i] ('"').
func skipString(s string, i int) (int, error) {
	for j := i + 1; j < len(s); j++ {
		switch c := s[j]; {
		case c == '\\':
			j++
		case c == '"':
			return j + 1, nil
		case c < 0x20:
			return 0, fmt.Errorf("control character in a string at offset %d", j)
		}
	}
	return 0, fmt.Errorf("unterminated string")
}

// skipValue returns the offset after the JSON value that starts at s[i].
func skipValue(s string, i int) (int, error) {
	if i >= len(s) {
		return 0, fmt.Errorf("want a value")
	}
	switch c := s[i]; {
	case c == '"':
		return skipString(s, i)
	case c == '{' || c == '[':
		// nested: find its end honouring strings, then let encoding/json
		// check it (rare: only ttft_breakdown_ms).
		depth := 0
		for j := i; j < len(s); j++ {
			switch s[j] {
			case '"':
				e, err := skipString(s, j)
				if err != nil {
					return 0, err
				}
				j = e - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					if !json.Valid([]byte(s[i : j+1])) {
						return 0, fmt.Errorf("invalid value at offset %d", i)
					}
					return j + 1, nil
				}
			}
		}
		return 0, fmt.Errorf("unterminated value at offset %d", i)
	case c == '-' || (c >= '0' && c <= '9'):
		j := i + 1
		for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == '.' || s[j] == 'e' || s[j] == 'E' || s[j] == '+' || s[j] == '-') {
			j++
		}
		if _, err := strconv.ParseFloat(s[i:j], 64); err != nil {
			return 0, fmt.Errorf("invalid number %q", s[i:j])
		}
		return j, nil
	}
	for _, lit := range [...]string{"null", "true", "false"} {
		if strings.HasPrefix(s[i:], lit) {
			return i + len(lit), nil
		}
	}
	return 0, fmt.Errorf("invalid value at offset %d", i)
}

// scanCell is parseCell on a raw value that is a substring of the records'
// text: a plain string or a number costs no copy.
func scanCell(raw string) cell {
	switch {
	case raw == "" || raw == "null":
		return cell{}
	case raw[0] == '"':
		if strings.IndexByte(raw, '\\') < 0 {
			return cell{s: raw[1 : len(raw)-1]}
		}
		return parseCell(json.RawMessage(raw))
	case raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9':
		f, err := strconv.ParseFloat(raw, 64)
		return cell{s: raw, num: f, isN: err == nil}
	}
	return cell{s: raw}
}

// scanParts reads a ttft_breakdown_ms value: null (no first token) or an
// object of numbers.
func scanParts(raw string, fields []jsonField) (map[string]float64, []jsonField, error) {
	if raw == "null" {
		return nil, fields[:0], nil
	}
	fields, err := scanObject(raw, fields)
	if err != nil {
		return nil, fields, err
	}
	parts := make(map[string]float64, len(fields))
	for _, f := range fields {
		v, err := strconv.ParseFloat(f.raw, 64)
		if err != nil {
			var x float64
			if err := json.Unmarshal([]byte(f.raw), &x); err != nil {
				return nil, fields, err
			}
			v = x
		}
		parts[f.key] = v
	}
	return parts, fields, nil
}
