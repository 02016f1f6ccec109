package idmap

import (
	"math/rand/v2"
	"testing"
)

// TestItem34_2Set checks Set against a Go map over random adds and removes
// (issue 34 item 2): keys drawn from a small range so that adds find keys
// present and removes find keys absent, key 0 (the empty-slot marker)
// among them, and keys of high bits only; runs wrap around the
// table's end and deletions shift them back. After every op the sizes
// agree, every key answers as the map does and every key sits in the run
// of its home.
func TestItem34_2Set(t *testing.T) {
	for _, tc := range []struct {
		name  string
		keys  func(r *rand.Rand) uint64
		steps int
	}{
		{"small range", func(r *rand.Rand) uint64 { return r.Uint64N(64) }, 4000},
		{"wide", func(r *rand.Rand) uint64 { return r.Uint64() | 1 }, 20000},
		{"high bits only", func(r *rand.Rand) uint64 { return r.Uint64N(16) << 60 }, 2000},
		{"grow and drain", func(r *rand.Rand) uint64 { return r.Uint64N(5000) * 0x9E3779B97F4A7C15 }, 30000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(7, 34))
			var s Set // the zero Set works
			model := map[uint64]bool{}
			seen := []uint64{0}
			for step := range tc.steps {
				k := tc.keys(r)
				seen = append(seen, k)
				if r.IntN(3) == 0 { // a third removes: the sets grow, then churn
					if got, want := s.Remove(k), model[k]; got != want {
						t.Fatalf("step %d: Remove(%#x) = %v, want %v", step, k, got, want)
					}
					delete(model, k)
				} else {
					if got, want := s.Add(k), !model[k]; got != want {
						t.Fatalf("step %d: Add(%#x) = %v, want %v", step, k, got, want)
					}
					model[k] = true
				}
				if s.Len() != len(model) {
					t.Fatalf("step %d: Len %d, want %d", step, s.Len(), len(model))
				}
				if step%97 == 0 || step == tc.steps-1 {
					checkSet(t, &s, model, seen)
				}
			}
		})
	}
}

func checkSet(t *testing.T, s *Set, model map[uint64]bool, keys []uint64) {
	t.Helper()
	for _, k := range keys {
		if got := s.Has(k); got != model[k] {
			t.Fatalf("Has(%#x) = %v, want %v", k, got, model[k])
		}
	}
	if 4*s.n > 3*len(s.slots) {
		t.Fatalf("%d keys in %d slots: over three quarters", s.n, len(s.slots))
	}
	mask := len(s.slots) - 1
	for i, k := range s.slots {
		if k == 0 {
			continue
		}
		for j := s.home(k); j != i; j = (j + 1) & mask {
			if s.slots[j] == 0 {
				t.Fatalf("key %#x at slot %d: hole at %d after its home %d", k, i, j, s.home(k))
			}
		}
	}
}

func BenchmarkItem34_2SetAddRemove(b *testing.B) {
	var s Set
	keys := make([]uint64, 1<<16)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range keys {
		keys[i] = r.Uint64()
	}
	for _, k := range keys[:len(keys)/2] {
		s.Add(k)
	}
	i := 0
	for b.Loop() {
		s.Add(keys[(i+len(keys)/2)&(len(keys)-1)])
		s.Remove(keys[i&(len(keys)-1)])
		i++
	}
}
