package workload

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/dynosim/dynosim-web/timing"
)

// ReadAzure parses an Azure LLM inference trace (Splitwise, ISCA'24): a CSV
// with header TIMESTAMP,ContextTokens,GeneratedTokens, where TIMESTAMP is a
// wall-clock datetime. It has no prefix information, so every prompt is
// unique. Timestamps are parsed as UTC; only differences matter.
func ReadAzure(name string, data []byte) (*Workload, error) {
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
		in, err := strconv.Atoi(strings.TrimSpace(f[1]))
		if err != nil || in < 0 {
			return nil, fmt.Errorf("%s:%d: ContextTokens: must be an integer ≥ 0, got %q", name, line, clip(f[1]))
		}
		out, err := strconv.Atoi(strings.TrimSpace(f[2]))
		if err != nil || out < 0 {
			return nil, fmt.Errorf("%s:%d: GeneratedTokens: must be an integer ≥ 0, got %q", name, line, clip(f[2]))
		}
		w.Sessions = append(w.Sessions, Session{Start: ts, Turns: []Turn{{Input: in, Output: out}}})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %v", name, line+1, err)
	}
	if len(w.Sessions) == 0 {
		return nil, fmt.Errorf("%s: empty trace", name)
	}
	w.normalize()
	return w, nil
}

func parseAzureTime(s string) (timing.Time, error) {
	t, err := time.Parse("2006-01-02 15:04:05.999999999", s)
	if err != nil {
		return 0, fmt.Errorf("want a datetime like 2023-11-16 18:15:46.6805900, got %q", clip(s))
	}
	return timing.Time(t.UnixNano()), nil
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
