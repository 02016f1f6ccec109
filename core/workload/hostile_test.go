package workload

import (
	"strings"
	"testing"
)

// Issue 11: values inside valid syntax that would overflow, wrap or exhaust
// memory are errors naming the file, the line and the field.
func TestHostileTraces(t *testing.T) {
	const hdr = "TIMESTAMP,ContextTokens,GeneratedTokens\n"
	long := `{"timestamp":0,"output_length":1,"hash_ids":[1` + strings.Repeat(",1", maxLine/2) + "]}\n"
	tests := []struct{ name, file, text, want string }{
		{"mooncake input_length past MaxRequestTokens", "t.jsonl", `{"timestamp":0,"input_length":16777217,"output_length":1,"hash_ids":[1]}`, "t.jsonl:1: input_length: must be ≤ 16777216"},
		{"mooncake output_length past MaxRequestTokens", "t.jsonl", `{"timestamp":0,"output_length":2147483647,"hash_ids":[1]}`, "t.jsonl:1: output_length: must be ≤ 16777216"},
		{"mooncake output_length past int32", "t.jsonl", `{"timestamp":0,"output_length":9999999999,"hash_ids":[1]}`, "t.jsonl:1: output_length: must be ≤ 16777216"},
		{"mooncake timestamp 1e15 ms", "t.jsonl", `{"timestamp":1e15,"output_length":1,"hash_ids":[1]}`, "t.jsonl:1: timestamp: must be ≤ 3155760000000 ms"},
		{"mooncake delay 1e15 ms", "t.jsonl", "{\"session_id\":1,\"timestamp\":0,\"output_length\":1,\"hash_ids\":[1]}\n{\"session_id\":1,\"delay\":1e15,\"output_length\":1,\"hash_ids\":[1]}", "t.jsonl:2: delay: must be ≤"},
		{"mooncake summed delays", "t.jsonl", "{\"session_id\":1,\"timestamp\":0,\"output_length\":1,\"hash_ids\":[1]}\n{\"session_id\":1,\"delay\":3e12,\"output_length\":1,\"hash_ids\":[1]}\n{\"session_id\":1,\"delay\":3e12,\"output_length\":1,\"hash_ids\":[1]}", "t.jsonl:3: delay: the session's delays add up past 100 years"},
		{"mooncake utf-8 bom", "t.jsonl", "\xEF\xBB\xBF{\"timestamp\":0,\"output_length\":1,\"hash_ids\":[1]}", "t.jsonl:1: the trace starts with a UTF-8 byte-order mark"},
		{"mooncake utf-16le bom", "t.jsonl", "\xFF\xFE{\x00", "t.jsonl:1: the trace is UTF-16 encoded"},
		{"mooncake utf-16 without bom", "t.jsonl", "{\x00\"\x00", "t.jsonl:1: the trace looks UTF-16 encoded"},
		{"mooncake utf-16be without bom", "t.jsonl", "\x00{\x00\"", "t.jsonl:1: the trace looks UTF-16 encoded"},
		{"mooncake over-long line", "t.jsonl", long, "t.jsonl:1: line longer than the limit of 64 MiB"},
		{"azure ContextTokens past int32", "a.csv", hdr + "2023-11-16 18:15:46.6805900,99999999999,1\n", "a.csv:2: ContextTokens: must be ≤ 16777216"},
		{"azure GeneratedTokens past MaxRequestTokens", "a.csv", hdr + "2023-11-16 18:15:46.6805900,1,2147483647\n", "a.csv:2: GeneratedTokens: must be ≤ 16777216"},
		{"azure date past 2262", "a.csv", hdr + "2300-01-01 00:00:00.0,1,1\n", "a.csv:2: TIMESTAMP: must lie between 1678 and 2262"},
		{"azure span past horizon", "a.csv", hdr + "1700-01-01 00:00:00.0,1,1\n2200-01-01 00:00:00.0,1,1\n", "a.csv: TIMESTAMP: the trace spans more than 100 years"},
		{"azure utf-8 bom", "a.csv", "\xEF\xBB\xBF" + hdr + "2023-11-16 18:15:46.6805900,1,1\n", "a.csv:1: the trace starts with a UTF-8 byte-order mark"},
		{"azure utf-16be bom", "a.csv", "\xFE\xFF\x00T", "a.csv:1: the trace is UTF-16 encoded"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if strings.HasSuffix(tc.file, ".csv") {
				_, err = ReadAzure(tc.file, []byte(tc.text))
			} else {
				_, err = ReadMooncake(tc.file, []byte(tc.text), 4)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// A trace speedup of 1e-300 saturates at the horizon instead of wrapping.
func TestScaleSaturates(t *testing.T) {
	for _, ratio := range []float64{1e-300, 1e-12} {
		if got := Scale(1e15, ratio); got <= 0 {
			t.Fatalf("Scale(1e15, %v) = %d, want saturated > 0", ratio, got)
		}
	}
}
