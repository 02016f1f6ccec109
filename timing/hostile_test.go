package timing

import (
	"math"
	"strings"
	"testing"
)

// Issue 11: FromMs and the pass pricing are defined for every float and
// never wrap: NaN, infinities and values past the horizon saturate.
func TestFromMsHostile(t *testing.T) {
	tests := []struct {
		name string
		ms   float64
		want Time
	}{
		{"one ms", 1, 1e6},
		{"rounds", 1.0000004, 1000000},
		{"zero", 0, 0},
		{"negative", -2, -2e6},
		{"1e15 ms", 1e15, Horizon},
		{"1e300 ms", 1e300, Horizon},
		{"+inf", math.Inf(1), Horizon},
		{"-1e300 ms", -1e300, -Horizon},
		{"-inf", math.Inf(-1), -Horizon},
		{"nan", math.NaN(), Horizon},
		{"below the horizon", 1e12, 1e18},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := FromMs(tc.ms); got != tc.want {
				t.Fatalf("FromMs(%v) = %d, want %d", tc.ms, got, tc.want)
			}
		})
	}
}

func TestScaleHostile(t *testing.T) {
	tests := []struct {
		name  string
		scale Scale
		m     Model
		want  Time
	}{
		{"speedup 1e-300", Scale{Speedup: 1e-300}, Fixed{Prefill: 10, Decode: 10}, Horizon},
		{"prefill 1e300", Scale{}, Fixed{Prefill: 1e300, Decode: 1}, Horizon},
		{"prefill inf", Scale{}, Fixed{Prefill: math.Inf(1), Decode: 1}, Horizon},
		{"prefill nan", Scale{}, Fixed{Prefill: math.NaN(), Decode: 1}, Horizon},
		{"decode speedup 1e-300", Scale{DecodeSpeedup: 1e-300, Speedup: 1}, Fixed{Prefill: 1, Decode: 1e300}, Horizon},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.scale.Prefill(tc.m, 1, 10, 0)
			if strings.HasPrefix(tc.name, "decode") {
				got = tc.scale.Decode(tc.m, 1, 10, 10, 100)
			}
			if got != tc.want {
				t.Fatalf("got %d, want %d", got, tc.want)
			}
		})
	}
}

func TestHostileProfiles(t *testing.T) {
	good, err := LoadProfile(readTestdata(t, "small.npz"), "small.npz")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		edit func(p *Interpolated)
		want string
	}{
		{"negative ttft", func(p *Interpolated) { p.PrefillTTFT[1] = -5 }, "x.npz: prefill_ttft_ms: value 1 is -5, want ≥ 0"},
		{"negative itl", func(p *Interpolated) { p.ITL[0] = -1 }, "x.npz: decode_itl: value 0 is -1, want ≥ 0"},
		{"negative axis", func(p *Interpolated) { p.PrefillT[0] = -100 }, "x.npz: prefill_isl: value 0 is -100, want ≥ 0"},
		{"ttft 1e300", func(p *Interpolated) { p.PrefillTTFT[0] = 1e300 }, "x.npz: prefill_ttft_ms: value 0 is 1e+300 ms, want ≤"},
		{"itl 1e300", func(p *Interpolated) { p.ITL[1] = 1e300 }, "x.npz: decode_itl: value 1 is 1e+300 ms, want ≤"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := *good
			p.PrefillT, p.PrefillTTFT = append([]float64(nil), good.PrefillT...), append([]float64(nil), good.PrefillTTFT...)
			p.ITL = append([]float64(nil), good.ITL...)
			tc.edit(&p)
			data, err := WriteNPZ(p.Arrays())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := LoadProfile(data, "x.npz"); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("err = %v, want prefix %q", err, tc.want)
			}
		})
	}
}

func TestHostileHFConfigs(t *testing.T) {
	const base = `"num_hidden_layers": 2, "intermediate_size": 128, "vocab_size": 100, `
	tests := []struct{ name, data, want string }{
		{"hidden not divisible by heads", `{` + base + `"hidden_size": 100, "num_attention_heads": 8}`, "hf.json: hidden_size: 100 is not divisible by num_attention_heads 8"},
		{"field 2^40", `{` + base + `"hidden_size": 1099511627776, "num_attention_heads": 8}`, "hf.json: hidden_size: want a non-negative integer ≤ 1048576"},
		{"kv bytes past 1 TiB", `{"num_hidden_layers": 1048576, "intermediate_size": 128, "vocab_size": 100, "hidden_size": 1048576, "num_attention_heads": 1024}`, "hf.json: the KV cache comes to"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ParseHFConfig([]byte(tc.data), "hf.json"); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("err = %v, want prefix %q", err, tc.want)
			}
		})
	}
	// An explicit head_dim may differ from hidden_size / heads.
	if _, err := ParseHFConfig([]byte(`{`+base+`"hidden_size": 100, "num_attention_heads": 8, "head_dim": 16}`), "hf.json"); err != nil {
		t.Fatal(err)
	}
}

// Issue 29 item 10: CeilNs saturates like FromNs (the tiers' copy times
// were converted without it, and a tiny bandwidth wrapped to negative).
func TestCeilNsSaturates(t *testing.T) {
	for _, tc := range []struct {
		ns   float64
		want Time
	}{
		{1.5, 2}, {-1.5, -1}, {0, 0}, {1e300, Horizon}, {math.Inf(1), Horizon}, {math.NaN(), Horizon},
		{-1e300, -Horizon}, {math.Inf(-1), -Horizon}, {float64(Horizon) - 1024, Horizon - 1024},
	} {
		if got := CeilNs(tc.ns); got != tc.want {
			t.Errorf("CeilNs(%v) = %d, want %d", tc.ns, got, tc.want)
		}
	}
}
