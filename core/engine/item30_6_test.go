package engine

import (
	"slices"
	"testing"
)

// Issue 30 item 6: a chunked prompt is admitted once. Its next chunks find
// its own earlier chunks in the tree; the reference mocker's
// sglang_cache_hit_tokens (Counters.CacheHitTokens) counts those, but they
// are not prompt served from the cache, so the admission reports only the
// prefix shared with earlier requests.
func TestItem30_6SGLangChunkedPromptAdmittedOnce(t *testing.T) {
	for _, tc := range []struct {
		name          string
		page, chunk   int
		shared, total uint32 // the earlier request's prompt, the chunked one's
	}{
		{"page1", 1, 8, 8, 30},
		{"page4", 4, 8, 8, 30},
		{"no shared prefix", 1, 8, 0, 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := mustSG(t, sgcfg(tc.page, 1024, tc.chunk))
			d := rankDriver{t: t, c: c}
			if tc.shared > 0 {
				sgSubmit(t, c, 1, span(0, tc.shared), 1)
				d.drain(10)
			}
			sgSubmit(t, c, 2, span(0, tc.total), 1)
			var adm []Admission
			hit := 0
			for _, p := range d.drain(20) {
				for _, a := range p.Admissions {
					if a.ID == 2 {
						adm = append(adm, a)
					}
				}
				hit += p.Counters.CacheHitTokens
			}
			if len(adm) != 1 || adm[0].Reused != int(tc.shared) || adm[0].Again {
				t.Fatalf("admissions %+v, want one reusing %d", adm, tc.shared)
			}
			// The reference's engine figure still counts every chunk's match.
			if hit <= int(tc.shared) {
				t.Fatalf("cache-hit tokens %d, want more than the shared %d (later chunks hit their own)", hit, tc.shared)
			}
		})
	}
}

// Issue 30 item 6: schedule_policy lpm orders the waiting queue by the
// longest cached prefix (SGLang's SchedulePolicy.calc_priority,
// python/sglang/srt/managers/schedule_policy.py), so where prefixes differ
// the admission order differs from fcfs: with two slots, lpm admits the
// request whose prompt is cached before two earlier arrivals.
func TestItem30_6LPMAdmissionOrderDiffersFromFCFS(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy SchedulePolicy
		want   []uint64
		reused []int
	}{
		{"fcfs", FCFS, []uint64{2, 3}, []int{0, 0}},
		{"lpm", LPM, []uint64{4, 2}, []int{40, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := sgcfg(1, 4096, 4096)
			cfg.SGLang.Schedule = tc.policy
			cfg.MaxSeqs = 2
			c := mustSG(t, cfg)
			d := rankDriver{t: t, c: c}
			sgSubmit(t, c, 1, span(0, 40), 1) // warms the cache with tokens 0..39
			d.drain(10)
			sgSubmit(t, c, 2, span(1000, 1040), 1)
			sgSubmit(t, c, 3, span(2000, 2040), 1)
			sgSubmit(t, c, 4, append(span(0, 40), span(3000, 3010)...), 1)
			p := d.step()
			var ids []uint64
			var reused []int
			for _, a := range p.Admissions {
				ids, reused = append(ids, a.ID), append(reused, a.Reused)
			}
			if !slices.Equal(ids, tc.want) || !slices.Equal(reused, tc.reused) {
				t.Fatalf("first pass admitted %v reusing %v, want %v reusing %v", ids, reused, tc.want, tc.reused)
			}
		})
	}
}

// Issue 30 item 6: under lpm a request part-way through a chunked prefill
// keeps its turn. SGLang holds it apart (Scheduler.chunked_req) and adds its
// next chunk before any waiting request; sorted with the queue, a request
// with a longer cached prefix overtook it, its pages locked and its
// prefill half done.
func TestItem30_6LPMKeepsTheChunkedPrefillFirst(t *testing.T) {
	for _, policy := range []SchedulePolicy{FCFS, LPM} {
		cfg := sgcfg(1, 4096, 8)
		cfg.SGLang.Schedule = policy
		c := mustSG(t, cfg)
		d := rankDriver{t: t, c: c}
		sgSubmit(t, c, 1, span(500, 532), 1) // B's 32-token prefix, cached
		d.drain(10)
		sgSubmit(t, c, 2, span(0, 20), 1) // A: chunks of 8
		d.step()
		if st, _ := c.State(2); st.Materialized != 8 {
			t.Fatalf("policy %d: A materialized %d after its first chunk, want 8", policy, st.Materialized)
		}
		sgSubmit(t, c, 3, append(span(500, 532), span(600, 610)...), 1) // B: 32 cached > A's 8
		d.step()
		a, _ := c.State(2)
		b, _ := c.State(3)
		if a.Materialized != 16 || b.Materialized != 0 {
			t.Fatalf("policy %d: after the second pass A %d, B %d materialized; want A's next chunk (16) before B (0)", policy, a.Materialized, b.Materialized)
		}
	}
}
