package sim

import (
	"os"
	"strings"
	"testing"
)

func TestTimingSourcesAreWired(t *testing.T) {
	profile, err := os.ReadFile("../../timing/testdata/perf_data.npz")
	if err != nil {
		t.Fatal(err)
	}
	const base = "traffic: {source: {type: synthetic, input_tokens: 512, output_tokens: 16}, stop: {requests: 20}}\n"
	ttft := func(cfg string, in Inputs) float64 {
		t.Helper()
		in.Config = []byte(base + cfg)
		rep, err := Predict(in, nil)
		if err != nil {
			t.Fatal(err)
		}
		return rep.Summary["mean_ttft_ms"]
	}
	poly := ttft("", Inputs{})
	fixed := ttft("engine: {workers: {aggregated: {timing: {type: fixed, prefill_ms: 100, decode_ms: 10}}}}", Inputs{})
	prof := ttft("", Inputs{Profile: profile, ProfileName: "perf_data.npz"})
	roof := ttft("engine: {workers: {aggregated: {timing: {type: default}, kv_cache: {capacity: {type: default}}}}}", Inputs{})
	if poly == fixed || poly == prof || poly == roof || prof == roof {
		t.Fatalf("timing sources give the same TTFT: poly %v fixed %v profile %v roofline %v", poly, fixed, prof, roof)
	}
	_, err = Predict(Inputs{Config: []byte(base), Profile: []byte("not a zip"), ProfileName: "p.npz"}, nil)
	if err == nil || !strings.HasPrefix(err.Error(), "p.npz") {
		t.Fatalf("bad profile: %v", err)
	}
	_, err = Predict(Inputs{Config: []byte(base + "engine: {model: gpt-9, workers: {aggregated: {timing: {type: default}}}}")}, nil)
	if err == nil || !strings.Contains(err.Error(), "gpt-9") {
		t.Fatalf("unknown model: %v", err)
	}
}
