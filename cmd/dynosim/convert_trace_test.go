package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 29 item 14: `convert-trace` of a 1.4 KB vLLM summary claiming
// 4 Mi requests of 16 Mi prompt tokens built a ~1 TB trace in memory. It
// now exits 2 before writing, naming the summary's fields and the trace
// limit, leaves an existing -o file as it was and no temporary file
// behind; an allowed conversion streams into -o.
func TestItem14ConvertTraceCLIRefusesHugeSummary(t *testing.T) {
	dir := t.TempDir()
	huge := write(t, dir, "huge.json", `{"completed": 4194304, "total_input_tokens": 70368744177664, "total_output_tokens": 4194304, "request_rate": 4, "duration": 1}`)
	out := write(t, dir, "out.jsonl", "old\n")
	var stdout, stderr bytes.Buffer
	err := run([]string{"convert-trace", "-o", out, huge}, &stdout, &stderr)
	if err == nil || exitCode(err) != 2 || !strings.Contains(err.Error(), huge+": completed (4194304 requests) × total_input_tokens / completed (16777216 prompt tokens") ||
		!strings.Contains(err.Error(), "passes 1073741824 bytes (workload.MaxTraceBytes") {
		t.Fatalf("exit %d: %v", exitCode(err), err)
	}
	if b, _ := os.ReadFile(out); string(b) != "old\n" {
		t.Fatalf("-o file is now %.80q", b)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, ".*.tmp")); len(m) != 0 {
		t.Fatalf("left behind %v", m)
	}
	stdout.Reset()
	if err := run([]string{"convert-trace", huge}, &stdout, &stderr); err == nil || stdout.Len() != 0 {
		t.Fatalf("to stdout: %d bytes written, error %v", stdout.Len(), err)
	}

	ok := write(t, dir, "ok.json", `{"completed": 1000, "total_input_tokens": 1024000, "total_output_tokens": 8000, "request_rate": 4, "duration": 1}`)
	stderr.Reset()
	if err := run([]string{"convert-trace", "-o", out, ok}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(out)
	st, _ := os.Stat(out)
	if n := bytes.Count(b, []byte("\n")); n != 1000 || !strings.Contains(stderr.String(), "wrote "+out+": 1000 requests") || st.Mode().Perm() != 0o644 {
		t.Fatalf("%d lines, mode %v, stderr %s", n, st.Mode(), stderr.String())
	}
}
