package sim

import (
	"os"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/core/report/schema"
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
		return rep.Summary[schema.TTFT.Key(schema.Mean)]
	}
	poly := ttft("engine: {workers: {aggregated: {timing: {type: polynomial}}}}", Inputs{})
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

// An omitted timing is the roofline of engine.model on engine.hardware and
// an omitted capacity is sized from GPU memory, so another GPU changes the
// prediction; a capacity or timing that gives numbers uses them; an
// unknown model or GPU is an error whatever the timing type.
func TestDefaultsMeanSomething(t *testing.T) {
	const base = "traffic: {source: {type: synthetic, input_tokens: 2048, output_tokens: 16}, stop: {requests: 20}}\n"
	run := func(cfg string) map[string]float64 {
		t.Helper()
		rep, err := Predict(Inputs{Config: []byte(base + cfg)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return rep.Summary
	}
	explicit := run("engine: {workers: {aggregated: {timing: {type: default}, kv_cache: {capacity: {type: default}}}}}")
	omitted := run("")
	if omitted[schema.TTFT.Key(schema.Mean)] != explicit[schema.TTFT.Key(schema.Mean)] {
		t.Errorf("omitted timing gives TTFT %v, the roofline %v", omitted[schema.TTFT.Key(schema.Mean)], explicit[schema.TTFT.Key(schema.Mean)])
	}
	b200, rtx := run("engine: {hardware: b200}"), run("engine: {hardware: rtx_4090}")
	if !(b200[schema.TTFT.Key(schema.Mean)] < omitted[schema.TTFT.Key(schema.Mean)] && omitted[schema.TTFT.Key(schema.Mean)] < rtx[schema.TTFT.Key(schema.Mean)]) {
		t.Errorf("TTFT b200 %v, h100 %v, rtx_4090 %v: want faster GPUs faster", b200[schema.TTFT.Key(schema.Mean)], omitted[schema.TTFT.Key(schema.Mean)], rtx[schema.TTFT.Key(schema.Mean)])
	}
	fixed := run("engine: {workers: {aggregated: {timing: {prefill_ms: 100, decode_ms: 10}, kv_cache: {capacity: {blocks: 900}}}}}")
	if fixed[schema.TTFT.Key(schema.Mean)] < 100 {
		t.Errorf("timing with prefill_ms is fixed timing: TTFT %v", fixed[schema.TTFT.Key(schema.Mean)])
	}
	for _, c := range []struct{ cfg, want string }{
		{"engine: {hardware: nope, workers: {aggregated: {timing: {type: polynomial}, kv_cache: {capacity: {blocks: 100}}}}}", `unknown hardware "nope" (known: a100_40gb`},
		{"engine: {model: gpt-9, workers: {aggregated: {timing: {type: fixed, prefill_ms: 1}}}}", "gpt-9"},
		{"engine: {workers: {aggregated: {kv_cache: {capacity: {type: default, blocks: 100}}}}}", "engine.workers.aggregated.kv_cache.capacity: blocks and bytes need type fixed"},
	} {
		_, err := Predict(Inputs{Config: []byte(base + c.cfg)}, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.cfg, err, c.want)
		}
	}
}

// Issue 30 item 5: a run timed by a profile says so: its pools report
// timing "profile", the file it was read from and the profile's own
// validation note, not the roofline's claim; the other timings name no file.
func TestItem30_5ProfileRunIsLabelled(t *testing.T) {
	profile, err := os.ReadFile("../../timing/testdata/perf_data.npz")
	if err != nil {
		t.Fatal(err)
	}
	const base = "traffic: {source: {type: synthetic, input_tokens: 512, output_tokens: 16}, stop: {requests: 5}}\n"
	for _, tc := range []struct {
		name, cfg, timing, file string
		in                      Inputs
	}{
		{"--profile", "", "profile", "perf_data.npz", Inputs{Profile: profile, ProfileName: "perf_data.npz"}},
		{"uploaded without a name", "", "profile", "profile.npz", Inputs{Profile: profile}},
		{"timing.path", "engine: {workers: {aggregated: {timing: {type: profile, path: p/perf.npz}}}}", "profile", "p/perf.npz",
			Inputs{ReadFile: func(string) ([]byte, error) { return profile, nil }}},
		{"--profile over a polynomial timing", "engine: {workers: {aggregated: {timing: {type: polynomial}}}}", "profile", "perf_data.npz", Inputs{Profile: profile, ProfileName: "perf_data.npz"}},
		{"roofline", "", "default", "", Inputs{}},
		{"polynomial", "engine: {workers: {aggregated: {timing: {type: polynomial}}}}", "polynomial", "", Inputs{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			in.Config = []byte(base + tc.cfg)
			rep, err := Predict(in, nil)
			if err != nil {
				t.Fatal(err)
			}
			p := rep.Deployment.Pools[0]
			if p.Timing != tc.timing || p.TimingProfile != tc.file {
				t.Fatalf("timing %q profile %q, want %q %q", p.Timing, p.TimingProfile, tc.timing, tc.file)
			}
			if tc.timing == "profile" && !strings.HasPrefix(p.Validation, "profile:") {
				t.Fatalf("validation %q: a profile run claims another model's validation", p.Validation)
			}
		})
	}
}
