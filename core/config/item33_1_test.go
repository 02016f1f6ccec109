package config

import (
	"strings"
	"testing"
)

// TestItem33_1WarmupParse: traffic.warmup takes requests or seconds (one
// of them), strictly, with errors naming the key; none is the default.
func TestItem33_1WarmupParse(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       Warmup
		err        string
	}{
		{"default none", "traffic: {stop: {requests: 10}}\n", Warmup{}, ""},
		{"requests", "traffic: {warmup: {requests: 20}}\n", Warmup{Requests: 20}, ""},
		{"seconds", "traffic: {warmup: {seconds: 2.5}}\n", Warmup{Seconds: 2.5}, ""},
		{"both", "traffic: {warmup: {requests: 5, seconds: 1}}\n", Warmup{}, "traffic.warmup: give requests or seconds, not both"},
		{"negative requests", "traffic: {warmup: {requests: -1}}\n", Warmup{}, "traffic.warmup.requests: must be ≥ 0, got -1"},
		{"negative seconds", "traffic: {warmup: {seconds: -2}}\n", Warmup{}, "traffic.warmup.seconds: must be a finite number ≥ 0, got -2"},
		{"NaN seconds", "traffic: {warmup: {seconds: .nan}}\n", Warmup{}, "traffic.warmup.seconds: must be a finite number"},
		{"infinite seconds", "traffic: {warmup: {seconds: .inf}}\n", Warmup{}, "traffic.warmup.seconds: must be a finite number"},
		{"unknown key", "traffic: {warmup: {duration: 3}}\n", Warmup{}, "traffic.warmup.duration"},
		{"fractional requests", "traffic: {warmup: {requests: 2.5}}\n", Warmup{}, "traffic.warmup.requests"},
		{"not a mapping", "traffic: {warmup: 10}\n", Warmup{}, "traffic.warmup: must be a mapping"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse("c.yaml", []byte(tc.yaml), nil)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want it to contain %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Traffic.Warmup != tc.want {
				t.Errorf("warmup %+v, want %+v", cfg.Traffic.Warmup, tc.want)
			}
		})
	}
}
