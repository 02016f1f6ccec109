package router

import (
	"slices"
	"testing"
)

type view []int // ranks per worker

func (v view) Workers() int      { return len(v) }
func (v view) Ranks(w int) int   { return v[w] }
func (v view) Load(int) Load     { return Load{} }
func (v view) Routable(int) bool { return true }

func places(p Policy, v View, n int) (ws, rs []int) {
	for i := range n {
		pl, ok := p.Place(&Request{ID: uint64(i + 1)}, v)
		if !ok {
			panic("held")
		}
		ws, rs = append(ws, pl.Worker), append(rs, pl.Rank)
	}
	return ws, rs
}

// H3: round robin over 4 workers gives [0,1,2,3,0]; ranks rotate per worker.
func TestH3RoundRobin(t *testing.T) {
	if ws, _ := places(NewRoundRobin(), view{1, 1, 1, 1}, 5); !slices.Equal(ws, []int{0, 1, 2, 3, 0}) {
		t.Fatalf("dispatch %v", ws)
	}
	if _, rs := places(NewRoundRobin(), view{3, 3}, 6); !slices.Equal(rs, []int{0, 0, 1, 1, 2, 2}) {
		t.Fatalf("ranks %v", rs)
	}
}

func TestRandomIsSeeded(t *testing.T) {
	v := view{1, 1, 1, 1}
	a, _ := places(NewRandom(1), v, 32)
	b, _ := places(NewRandom(1), v, 32)
	c, _ := places(NewRandom(2), v, 32)
	if !slices.Equal(a, b) || slices.Equal(a, c) {
		t.Fatalf("seeded picks %v %v %v", a, b, c)
	}
	for _, w := range a {
		if w < 0 || w >= 4 {
			t.Fatalf("worker %d out of range", w)
		}
	}
}
