package engine

import "testing"

// TestItem31_3RankPasses: the live server publishes forward-pass metrics
// per data-parallel rank, so a worker's lane pass must give each rank's
// own pass, whose FPM a merged lane pass does not carry. Rank r gets a
// prompt of 4(r+1) tokens; each rank's first pass prefills exactly its
// prompt, and only the ranks with work appear.
func TestItem31_3RankPasses(t *testing.T) {
	for _, tc := range []struct {
		name         string
		ranks, lanes int
		busy         []int // ranks given a request
	}{
		{"one rank", 1, 1, []int{0}},
		{"lock-step lane of two", 2, 1, []int{0, 1}},
		{"lock-step lane, one idle rank", 3, 1, []int{0, 2}},
		{"a lane per rank", 2, 2, []int{0, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := NewLanedWorker(cfg4(32, 32, 4, false), tc.ranks, tc.lanes)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range tc.busy {
				if err := w.Ranks[r].Submit(Request{ID: uint64(r + 1), Prompt: span(0, uint32(4*(r+1))), MaxOutput: 2}); err != nil {
					t.Fatal(err)
				}
			}
			var got []int
			for k := range w.Lanes() {
				p := w.StepLane(0, k)
				for _, rp := range w.RankPasses(p) {
					got = append(got, rp.Rank)
					if f := rp.Pass.FPM; f.PrefillRequests != 1 || f.PrefillTokens != 4*(rp.Rank+1) {
						t.Fatalf("rank %d: fpm %+v, want one prefill of %d tokens", rp.Rank, f, 4*(rp.Rank+1))
					}
				}
			}
			if len(got) != len(tc.busy) {
				t.Fatalf("rank passes of ranks %v, want %v", got, tc.busy)
			}
			for i := range got {
				if got[i] != tc.busy[i] {
					t.Fatalf("rank passes of ranks %v, want %v", got, tc.busy)
				}
			}
			if w.RankPasses(&Pass{}) != nil {
				t.Fatal("a pass no lane returned has rank passes")
			}
		})
	}
}
