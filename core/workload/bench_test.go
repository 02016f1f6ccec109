package workload

import (
	"os"
	"testing"
)

func BenchmarkReadConversation(b *testing.B) {
	data, err := os.ReadFile("../../../shared/traces/mooncake/conversation_trace.jsonl")
	if err != nil {
		b.Skip(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ReadMooncake("c.jsonl", data, 512); err != nil {
			b.Fatal(err)
		}
	}
}
