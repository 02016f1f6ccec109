package workload

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/dynosim/dynosim-web/timing"
)

// ReadAzure parses an Azure LLM inference trace (Splitwise, ISCA'24): a CSV
// with header TIMESTAMP,ContextTokens,GeneratedTokens, where TIMESTAMP is a
// wall-clock datetime. It has no prefix information, so every prompt is
// unique. Timestamps are parsed as UTC; only differences matter.
func ReadAzure(name string, data []byte) (*Workload, error) {
	if err := checkEncoding(name, data); err != nil {
		return nil, err
	}
	w := &Workload{Name: name, Timestamps: true}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if line == 1 {
			if h := strings.ReplaceAll(text, " ", ""); !strings.EqualFold(h, "TIMESTAMP,ContextTokens,GeneratedTokens") {
				return nil, fmt.Errorf("%s:1: header: want TIMESTAMP,ContextTokens,GeneratedTokens, got %q", name, clip(text))
			}
			continue
		}
		if text == "" {
			continue
		}
		f := strings.Split(text, ",")
		if len(f) != 3 {
			return nil, fmt.Errorf("%s:%d: want 3 fields, got %d", name, line, len(f))
		}
		ts, err := parseAzureTime(strings.TrimSpace(f[0]))
		if err != nil {
			return nil, fmt.Errorf("%s:%d: TIMESTAMP: %v", name, line, err)
		}
		in, err := intField(json.Number(strings.TrimSpace(f[1])), -1)
		if err == nil && in < 0 {
			err = fmt.Errorf("must be an integer ≥ 0, got %q", clip(f[1]))
		}
		if err != nil {
			return nil, fmt.Errorf("%s:%d: ContextTokens: %v", name, line, err)
		}
		out, err := intField(json.Number(strings.TrimSpace(f[2])), -1)
		if err == nil && out < 0 {
			err = fmt.Errorf("must be an integer ≥ 0, got %q", clip(f[2]))
		}
		if err != nil {
			return nil, fmt.Errorf("%s:%d: GeneratedTokens: %v", name, line, err)
		}
		w.Sessions = append(w.Sessions, Session{Start: ts, Turns: []Turn{{Input: in, Output: out}}})
	}
	if err := sc.Err(); err != nil {
		return nil, scanErr(name, line+1, err)
	}
	if len(w.Sessions) == 0 {
		return nil, fmt.Errorf("%s: empty trace", name)
	}
	lo, hi := w.Sessions[0].Start, w.Sessions[0].Start
	for i := range w.Sessions {
		lo, hi = min(lo, w.Sessions[i].Start), max(hi, w.Sessions[i].Start)
	}
	if hi > lo+timing.Horizon { // lo+Horizon cannot overflow; hi-lo could
		return nil, fmt.Errorf("%s: TIMESTAMP: the trace spans more than 100 years of virtual time", name)
	}
	w.normalize()
	return w, nil
}

// Azure datetimes must lie where UnixNano is defined (1678..2262).
var azureMin, azureMax = time.Unix(0, math.MinInt64), time.Unix(0, math.MaxInt64)

func parseAzureTime(s string) (timing.Time, error) {
	t, err := time.Parse("2006-01-02 15:04:05.999999999", s)
	if err != nil {
		return 0, fmt.Errorf("want a datetime like 2023-11-16 18:15:46.6805900, got %q", clip(s))
	}
	if t.Before(azureMin) || t.After(azureMax) {
		return 0, fmt.Errorf("must lie between 1678 and 2262 (nanoseconds since 1970 in int64), got %q", clip(s))
	}
	return timing.Time(t.UnixNano()), nil
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
