package workload

import (
	"slices"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/kv"
	"github.com/dynosim/dynosim-web/timing"
)

func read(t *testing.T, text string, block int) *Workload {
	t.Helper()
	w, err := ReadMooncake("t.jsonl", []byte(text), block)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// L1: one row keeps its fields; hash ids are interned densely.
func TestL1Row(t *testing.T) {
	w := read(t, `{"timestamp":123,"input_length":8,"output_length":4,"hash_ids":[7,8],"priority":-3,"strict_priority":7}`, 4)
	if len(w.Sessions) != 1 {
		t.Fatalf("sessions %d", len(w.Sessions))
	}
	tr := w.Sessions[0].Turns[0]
	if tr.Input != 8 || tr.Output != 4 || !slices.Equal(tr.Blocks, []uint32{0, 1}) {
		t.Fatalf("turn %+v", tr)
	}
	// The first arrival is normalised to 0.
	if w.Sessions[0].Start != 0 {
		t.Fatalf("start %v", w.Sessions[0].Start)
	}
}

// L2: ids above 2^32 stay distinct; equal ids give equal tokens.
func TestL2Interning(t *testing.T) {
	w := read(t, `{"timestamp":0,"input_length":4,"output_length":1,"hash_ids":[4294967296]}
{"timestamp":1,"input_length":4,"output_length":1,"hash_ids":[0]}
{"timestamp":2,"input_length":4,"output_length":1,"hash_ids":[4294967296]}`, 4)
	p := func(i int) []uint32 { return w.Prompt(nil, &w.Sessions[i].Turns[0]) }
	if slices.Equal(p(0), p(1)) || !slices.Equal(p(0), p(2)) {
		t.Fatalf("prompts %v %v %v", p(0), p(1), p(2))
	}
}

// L3: session rows group into turns with explicit or derived delays.
func TestL3Sessions(t *testing.T) {
	w := read(t, `{"session_id":"a","timestamp":10,"input_length":4,"output_length":1,"hash_ids":[1]}
{"session_id":"a","delay":25,"input_length":8,"output_length":1,"hash_ids":[1,2]}
{"session_id":"b","timestamp":20,"input_length":4,"output_length":1,"hash_ids":[3]}
{"session_id":"b","timestamp":70,"input_length":4,"output_length":1,"hash_ids":[3]}`, 4)
	if len(w.Sessions) != 2 || len(w.Sessions[0].Turns) != 2 {
		t.Fatalf("sessions %+v", w.Sessions)
	}
	if d := w.Sessions[0].Turns[1].Delay; d != timing.FromMs(25) {
		t.Fatalf("a delay %v", d)
	}
	if d := w.Sessions[1].Turns[1].Delay; d != timing.FromMs(50) {
		t.Fatalf("b delay %v", d)
	}
	if w.Sessions[1].Start != timing.FromMs(10) {
		t.Fatalf("b start %v", w.Sessions[1].Start)
	}
}

// L4, L5: missing input_length; token synthesis and engine re-chunking.
func TestL4L5Tokens(t *testing.T) {
	w := read(t, `{"timestamp":0,"output_length":1,"hash_ids":[1,2]}`, 4)
	if in := w.Sessions[0].Turns[0].Input; in != 8 {
		t.Fatalf("L4 input %d", in)
	}
	w = read(t, `{"timestamp":0,"input_length":6,"output_length":1,"hash_ids":[1,2]}`, 4)
	p := w.Prompt(nil, &w.Sessions[0].Turns[0])
	if !slices.Equal(p, []uint32{0, 0, 0, 0, 1, 1}) {
		t.Fatalf("L5 tokens %v", p) // interned ids 1,2 → 0,1
	}
	for _, tc := range []struct{ block, hashes int }{{4, 1}, {2, 3}} {
		n := 0
		h := kv.Hasher{BlockSize: tc.block}
		h.Add(p, func(_, _ uint64) { n++ })
		if n != tc.hashes {
			t.Errorf("engine block %d: %d hashes, want %d", tc.block, n, tc.hashes)
		}
	}
	// Clamping: input beyond the hashed capacity is cut.
	w = read(t, `{"timestamp":0,"input_length":100,"output_length":1,"hash_ids":[1]}`, 4)
	if in := w.Sessions[0].Turns[0].Input; in != 4 {
		t.Fatalf("clamped input %d", in)
	}
}

// H1: speedup scales timestamps after normalisation: 100 and 200 with
// ratio 10 → 0 and 10.
func TestH1Speedup(t *testing.T) {
	w := read(t, `{"timestamp":100,"input_length":4,"output_length":1,"hash_ids":[1]}
{"timestamp":200,"input_length":4,"output_length":1,"hash_ids":[1]}`, 4)
	if a, b := Scale(w.Sessions[0].Start, 10), Scale(w.Sessions[1].Start, 10); a != 0 || b != timing.FromMs(10) {
		t.Fatalf("starts %v %v", a, b)
	}
	if Scale(timing.FromMs(3), 1) != timing.FromMs(3) || Scale(1, 3) != 0 || Scale(2, 3) != 1 {
		t.Fatal("rounding")
	}
}

func TestSynthTokens(t *testing.T) {
	want := []struct {
		i, j uint64
		tok  uint32
	}{{0, 0, 2065550767}, {0, 1, 2298633409}, {0, 2, 479680206}, {1, 0, 2743206200}, {1, 1, 4250506607}, {2, 0, 2077013298}}
	for _, tc := range want {
		if got := SynthToken(tc.i, tc.j); got != tc.tok {
			t.Errorf("tok(%d,%d) = %d, want %d", tc.i, tc.j, got, tc.tok)
		}
	}
}

func TestMooncakeErrors(t *testing.T) {
	tests := []struct{ name, text, want string }{
		{"malformed", "{\"timestamp\":0,\"output_length\":1,\"hash_ids\":[1]}\n{oops", "t.jsonl:2: invalid JSON"},
		{"missing hash_ids", `{"timestamp":0,"input_length":4,"output_length":1}`, "t.jsonl:1: hash_ids: missing"},
		{"missing output", `{"timestamp":0,"hash_ids":[1]}`, "t.jsonl:1: output_length: missing"},
		{"negative output", `{"timestamp":0,"output_length":-3,"hash_ids":[1]}`, "t.jsonl:1: output_length: must be an integer ≥ 0, got -3"},
		{"negative input", `{"timestamp":0,"input_length":-1,"output_length":1,"hash_ids":[1]}`, "t.jsonl:1: input_length: must be an integer ≥ 0"},
		{"float hash id", `{"timestamp":0,"output_length":1,"hash_ids":[1.5]}`, "t.jsonl:1: hash_ids[0]: must be an integer ≥ 0, got 1.5"},
		{"string hash id", `{"timestamp":0,"output_length":1,"hash_ids":["x"]}`, "t.jsonl:1: hash_ids: must be a list of numbers"},
		{"fractional output", `{"timestamp":0,"output_length":2.5,"hash_ids":[1]}`, "t.jsonl:1: output_length: must be an integer ≥ 0, got 2.5"},
		{"nan timestamp", `{"timestamp":"NaN","output_length":1,"hash_ids":[1]}`, "t.jsonl:1: timestamp"},
		{"empty", "\n\n", "t.jsonl: empty trace"},
		{"not an object", `[1,2]`, "t.jsonl:1: invalid JSON"},
		{"planned length", `{"timestamp":0,"output_length":2,"output_token_ids":[1],"hash_ids":[1]}`, "t.jsonl:1: output_token_ids: length 1, want output_length 2"},
		{"first turn delay", `{"session_id":1,"timestamp":0,"delay":5,"output_length":1,"hash_ids":[1]}`, "t.jsonl:1: delay: must be absent or 0"},
	}
	for _, tc := range tests {
		_, err := ReadMooncake("t.jsonl", []byte(tc.text), 4)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want prefix %q", tc.name, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: multi-line error %q", tc.name, err)
		}
	}
}

func TestAzure(t *testing.T) {
	w, err := ReadAzure("a.csv", []byte("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:50.9951690,396,109\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Sessions) != 2 || w.Sessions[1].Start != timing.Time(4314579000) || w.Sessions[0].Turns[0].Input != 374 {
		t.Fatalf("sessions %+v", w.Sessions)
	}
	p0, p1 := w.Prompt(nil, &w.Sessions[0].Turns[0]), w.Prompt(nil, &w.Sessions[1].Turns[0])
	if len(p0) != 374 || p0[0] == p1[0] {
		t.Fatal("synthetic prompts not unique")
	}
	for _, tc := range []struct{ text, want string }{
		{"a,b\n", "a.csv:1: header"},
		{"TIMESTAMP,ContextTokens,GeneratedTokens\nyesterday,1,1\n", "a.csv:2: TIMESTAMP"},
		{"TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,-4,1\n", "a.csv:2: ContextTokens"},
		{"TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,4\n", "a.csv:2: want 3 fields"},
		{"TIMESTAMP,ContextTokens,GeneratedTokens\n", "a.csv: empty trace"},
	} {
		if _, err := ReadAzure("a.csv", []byte(tc.text)); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("err = %v, want prefix %q", err, tc.want)
		}
	}
}

func FuzzReadMooncake(f *testing.F) {
	f.Add([]byte(`{"timestamp":0,"input_length":8,"output_length":4,"hash_ids":[7,8]}`))
	f.Add([]byte(`{"session_id":"a","timestamp":10,"output_length":1,"hash_ids":[1]}` + "\n" + `{"session_id":"a","delay":5,"output_length":1,"hash_ids":[1,2]}`))
	f.Add([]byte(`{"timestamp":1e30,"output_length":1,"hash_ids":[18446744073709551615]}`))
	f.Add([]byte("{\"created_time\":5,\"output_tokens\":2,\"output_token_ids\":[1,2],\"hash_ids\":[]}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		w, err := ReadMooncake("f.jsonl", data, 4)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		for i := range w.Sessions {
			if w.Sessions[i].Start < 0 {
				t.Fatal("negative start")
			}
			for j := range w.Sessions[i].Turns {
				tr := &w.Sessions[i].Turns[j]
				if tr.Input < 0 || tr.Output < 0 || tr.Delay < 0 || tr.Input > len(tr.Blocks)*4 {
					t.Fatalf("bad turn %+v", tr)
				}
				if got := len(w.Prompt(nil, tr)); got != tr.Input {
					t.Fatalf("prompt %d tokens, want %d", got, tr.Input)
				}
			}
		}
	})
}

func FuzzReadAzure(f *testing.F) {
	f.Add([]byte("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n"))
	f.Add([]byte("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,1,0\n2023-11-16 18:15:45,2,3\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		w, err := ReadAzure("f.csv", data)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		for i := range w.Sessions {
			if w.Sessions[i].Start < 0 {
				t.Fatal("negative start")
			}
		}
	})
}
