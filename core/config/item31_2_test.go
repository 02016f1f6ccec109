package config

import (
	"strings"
	"testing"
)

// Issue 31 item 2: kv_cache.tiers.offload (auto | on_store | on_evict;
// auto is on_store under engine.semantics real, on_evict under mocker) and
// router.host_cache_hit_weight / router.disk_cache_hit_weight, each
// validated with an error naming the key.
func TestItem31_2OffloadAndWeights(t *testing.T) {
	tiers := func(semantics, offload string) string {
		o := ""
		if offload != "" {
			o = "offload: " + offload + ", "
		}
		return "engine:\n  semantics: " + semantics + "\n  workers:\n    aggregated:\n      kv_cache: {g1_backend: kvbm, tiers: {" + o + "g2: {blocks: 100}}}\n"
	}
	for _, tc := range []struct {
		name, yaml   string
		writeThrough bool
		err          string
	}{
		{"real default", tiers("real", ""), true, ""},
		{"mocker default", tiers("mocker", ""), false, ""},
		{"real on_evict", tiers("real", "on_evict"), false, ""},
		{"mocker on_store", tiers("mocker", "on_store"), true, ""},
		{"explicit auto", tiers("real", "auto"), true, ""},
		{"unknown value", tiers("real", "eager"), false,
			`engine.workers.aggregated.kv_cache.tiers.offload: must be one of auto, on_store, on_evict, got "eager"`},
		{"host weight negative", "router: {host_cache_hit_weight: -0.5}\n", false, "router.host_cache_hit_weight: must be in [0, 1e6]"},
		{"disk weight NaN", "router: {disk_cache_hit_weight: .nan}\n", false, "router.disk_cache_hit_weight: must be a finite number"},
		{"disk weight huge", "router: {disk_cache_hit_weight: 1e9}\n", false, "router.disk_cache_hit_weight: must be in [0, 1e6]"},
		{"weights set", "router: {policy: kv_router, host_cache_hit_weight: 1, disk_cache_hit_weight: 0}\n", false, ""},
		{"weights under router.kv are unknown", "router: {kv: {host_cache_hit_weight: 1}}\n", false, "router.kv.host_cache_hit_weight"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse("c.yaml", []byte(tc.yaml), nil)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tr := cfg.Engine.Workers.Aggregated.KVCache.Tiers
			if got := tr.WriteThrough(cfg.Engine.Semantics); got != tc.writeThrough && strings.Contains(tc.yaml, "tiers") {
				t.Fatalf("write-through %v, want %v", got, tc.writeThrough)
			}
		})
	}
	d := Default()
	if d.Engine.Workers.Aggregated.KVCache.Tiers.Offload != "auto" || d.Router.HostCacheHitWeight != 0.75 || d.Router.DiskCacheHitWeight != 0.25 {
		t.Fatalf("defaults: offload %q, weights %v %v", d.Engine.Workers.Aggregated.KVCache.Tiers.Offload, d.Router.HostCacheHitWeight, d.Router.DiskCacheHitWeight)
	}
}
