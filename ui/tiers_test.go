package main

import (
	"strings"
	"testing"
)

// tiersG3 is a report with kv_tiers: G2 and G3 on two workers (the whole
// conversation trace, series cut); tiersDisagg two pools, one with G4 and
// an instant link.
const tiersG3 = `{"summary": {"num_requests": 1000}, "kv_tiers": [{"pool": "aggregated", "block_bytes": 8388608, "offload_batch_blocks": 32, "workers": 2,
 "tiers": [
  {"tier": "g2", "scope": "worker", "capacity_blocks": 4000, "peak_blocks": 8000, "hit_blocks": 5056, "onboarded_blocks": 449632, "offloaded_blocks": 2114283, "evicted_blocks": 2550859},
  {"tier": "g3", "scope": "shared", "capacity_blocks": 100000, "peak_blocks": 100000, "hit_blocks": 444576, "onboarded_blocks": 444576, "offloaded_blocks": 1761086, "evicted_blocks": 0}],
 "links": [
  {"link": "g1_to_g2", "scope": "worker", "instances": 2, "bandwidth_gb_per_second": 14, "transfers": 123726, "blocks": 2114283, "bytes": 17735891288064, "busy_ms": 1266849.3777262177, "utilization": 0.044752411457476285},
  {"link": "g2_to_g1", "scope": "worker", "instances": 2, "bandwidth_gb_per_second": 14, "transfers": 2992, "blocks": 449632, "bytes": 3771786592256, "busy_ms": 269413.3280181906, "utilization": 0.009517229372001742},
  {"link": "g2_to_g3", "scope": "shared", "instances": 1, "bandwidth_gb_per_second": 7, "transfers": 104838, "blocks": 1761086, "bytes": 14773060108288, "busy_ms": 2110437.1583212, "utilization": 0.14910557438778424},
  {"link": "g3_to_g2", "scope": "shared", "instances": 1, "bandwidth_gb_per_second": 7, "transfers": 2950, "blocks": 444576, "bytes": 3729373790208, "busy_ms": 532767.6843154622, "utilization": 0.03764084198000861}],
 "series": {"bucket_ms": 102400, "t_ms": [0, 102400], "occupancy": [{"tier": "g2", "blocks": [6198, 8000], "fraction": [0.77475, 1]}], "utilization": [{"name": "g1_to_g2", "values": [0.02, 0.05]}]}}]}`

const tiersDisagg = `{"kv_tiers": [
 {"pool": "prefill", "workers": 1,
  "tiers": [
   {"tier": "g2", "scope": "worker", "capacity_blocks": 100, "peak_blocks": 100, "hit_blocks": 1, "onboarded_blocks": 1, "offloaded_blocks": 900, "evicted_blocks": 800},
   {"tier": "g4", "scope": "shared", "capacity_blocks": 0, "peak_blocks": 850, "hit_blocks": 12, "onboarded_blocks": 12, "offloaded_blocks": 850, "evicted_blocks": 0}],
  "links": [
   {"link": "g1_to_g2", "scope": "worker", "instances": 1, "bandwidth_gb_per_second": 0, "transfers": 30, "blocks": 900, "bytes": 750000, "busy_ms": 0, "utilization": 0},
   {"link": "g2_to_g4", "scope": "shared", "instances": 1, "bandwidth_gb_per_second": 1.5, "transfers": 30, "blocks": 850, "bytes": 0, "busy_ms": 12.5, "utilization": 0.5}]},
 {"pool": "decode", "workers": 1, "tiers": [], "links": []}]}`

func TestTiersView(t *testing.T) {
	type cells map[string]string // row name → its cells' texts joined by " | "
	tests := []struct {
		name    string
		report  string
		pools   []string // pool, title
		summary []string
		tiers   cells
		links   cells
	}{
		{name: "no kv_tiers", report: `{"summary": {"num_requests": 1}}`},
		{name: "empty kv_tiers", report: `{"kv_tiers": []}`},
		{
			name: "g2 and g3", report: tiersG3, pools: []string{"aggregated", ""},
			summary: []string{"G2 served 5,056 blocks of prefix, G3 444,576; the G1→G2 links were busy 4.5 % of the run on average (the busiest, G2→G3, 14.9 %)."},
			tiers: cells{
				"g2 (host)": "per worker | 4,000 per worker | 8,000 | 5,056 | 449,632 | 2,114,283 | 2,550,859",
				"g3 (disk)": "shared | 100,000 | 100,000 | 444,576 | 444,576 | 1,761,086 | 0",
			},
			links: cells{
				"g1_to_g2": "2 (per worker) | 14 GB/s | 123,726 | 2,114,283 | 17.74 TB | 1,266,849 ms (21 min 6 s) | 4.5 %",
				"g2_to_g1": "2 (per worker) | 14 GB/s | 2,992 | 449,632 | 3.77 TB | 269,413 ms (4 min 29 s) | 1.0 %",
				"g2_to_g3": "1 (shared) | 7 GB/s | 104,838 | 1,761,086 | 14.77 TB | 2,110,437 ms (35 min 10 s) | 14.9 %",
				"g3_to_g2": "1 (shared) | 7 GB/s | 2,950 | 444,576 | 3.73 TB | 532,768 ms (8 min 52 s) | 3.8 %",
			},
		},
		{
			name: "two pools, g4 unbounded, an instant link", report: tiersDisagg, pools: []string{"prefill", "Prefill pool", "decode", "Decode pool"},
			summary: []string{"G2 served 1 block of prefix, G4 12; the G1→G2 link was busy 0.0 % of the run (the busiest, G2→G4, 50.0 %).", ""},
			tiers: cells{
				"g2 (host)":   "per worker | 100 per worker | 100 | 1 | 1 | 900 | 800",
				"g4 (object)": "shared | unbounded | 850 | 12 | 12 | 850 | 0",
			},
			links: cells{
				"g1_to_g2": "1 (per worker) | instant | 30 | 900 | 750.0 kB | 0.00 ms | 0.0 %",
				"g2_to_g4": "1 (shared) | 1.50 GB/s | 30 | 850 | 0 B | 12.5 ms | 50.0 %",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := parseReport([]byte(tc.report))
			if err != nil {
				t.Fatal(err)
			}
			v := tiersView(p.KVTiers)
			if tc.pools == nil {
				if v != nil {
					t.Fatalf("view = %+v, want none", v)
				}
				return
			}
			if v == nil || len(v.Pools)*2 != len(tc.pools) {
				t.Fatalf("view = %+v, want pools %q", v, tc.pools)
			}
			gotTiers, gotLinks := cells{}, cells{}
			for i, pv := range v.Pools {
				if pv.Pool != tc.pools[2*i] || pv.Title != tc.pools[2*i+1] || pv.Summary != tc.summary[i] {
					t.Errorf("pool %d = %q %q %q, want %q %q %q", i, pv.Pool, pv.Title, pv.Summary, tc.pools[2*i], tc.pools[2*i+1], tc.summary[i])
				}
				if len(pv.TierHeads) != 8 || len(pv.LinkHeads) != 8 || pv.TierHeads[4].Text != "Hits (blocks)" || pv.LinkHeads[7].Text != "Utilisation" {
					t.Errorf("heads = %+v, %+v", pv.TierHeads, pv.LinkHeads)
				}
				for _, set := range []struct {
					rows  []TierRow
					heads []TierHead
					out   cells
				}{{pv.Tiers, pv.TierHeads, gotTiers}, {pv.Links, pv.LinkHeads, gotLinks}} {
					for _, r := range set.rows {
						var ts []string
						for j, c := range r.Cells {
							ts = append(ts, c.Text)
							// every cell names its row header and its column's, and is labelled for phone cards
							if h := set.heads[j+1]; c.Col != h.Text || c.Headers != r.ID+" "+h.ID {
								t.Errorf("%s cell %d: col %q headers %q, want %q and %q", r.Name, j, c.Col, c.Headers, h.Text, r.ID+" "+h.ID)
							}
						}
						set.out[r.Label] = strings.Join(ts, " | ")
					}
				}
			}
			for _, cmp := range []struct {
				kind      string
				got, want cells
			}{{"tiers", gotTiers, tc.tiers}, {"links", gotLinks, tc.links}} {
				if len(cmp.got) != len(cmp.want) {
					t.Errorf("%s = %q, want %q", cmp.kind, cmp.got, cmp.want)
				}
				for k, w := range cmp.want {
					if cmp.got[k] != w {
						t.Errorf("%s %s = %q, want %q", cmp.kind, k, cmp.got[k], w)
					}
				}
			}
		})
	}
}

// The raw values tests and scripts read (data-value) are the report's, and
// ids are unique in the page across pools.
func TestTiersViewRaw(t *testing.T) {
	p, err := parseReport([]byte(tiersG3))
	if err != nil {
		t.Fatal(err)
	}
	v := tiersView(append(p.KVTiers, p.KVTiers...))
	g2 := v.Pools[0].Tiers[0]
	want := map[string]string{"scope": "worker", "capacity_blocks": "4000", "peak_blocks": "8000", "hit_blocks": "5056", "onboarded_blocks": "449632",
		"offloaded_blocks": "2114283", "evicted_blocks": "2550859"}
	for _, c := range g2.Cells {
		if want[c.Key] != c.Raw {
			t.Errorf("g2 %s = %q, want %q", c.Key, c.Raw, want[c.Key])
		}
	}
	if u := v.Pools[0].Links[0].Cells[6]; u.Key != "utilization" || u.Raw != "0.044752411457476285" {
		t.Errorf("utilization cell = %+v", u)
	}
	ids := map[string]bool{}
	for _, pv := range v.Pools {
		for _, id := range append(headIDs(pv.TierHeads, pv.LinkHeads), rowIDs(pv.Tiers, pv.Links)...) {
			if ids[id] {
				t.Errorf("id %q twice", id)
			}
			ids[id] = true
		}
	}
}

func headIDs(hs ...[]TierHead) (out []string) {
	for _, h := range hs {
		for _, x := range h {
			out = append(out, x.ID)
		}
	}
	return out
}

func rowIDs(rs ...[]TierRow) (out []string) {
	for _, r := range rs {
		for _, x := range r {
			out = append(out, x.ID)
		}
	}
	return out
}
