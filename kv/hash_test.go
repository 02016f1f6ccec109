package kv

import (
	"testing"

	"github.com/zeebo/xxh3"
)

// The vectors of spec §11.1 (upstream lib/tokens and kv-router tests).
func TestHashVectors(t *testing.T) {
	l1234 := LocalHash([]uint32{1, 2, 3, 4})
	l5678 := LocalHash([]uint32{5, 6, 7, 8})
	s2 := ChainHash(l1234, l5678)
	l9 := LocalHash([]uint32{9, 10, 11, 12})
	l0123 := LocalHash([]uint32{0, 1, 2, 3})
	l4567 := LocalHash([]uint32{4, 5, 6, 7})
	tests := []struct {
		name      string
		got, want uint64
	}{
		{"L[1..4]", l1234, 14643705804678351452},
		{"L[5..8]", l5678, 16777012769546811212},
		{"S chain", s2, 4945711292740353085},
		{"L[9..12]", l9, 483935686894639516},
		{"S chain 3", ChainHash(s2, l9), 12583592247330656132},
		{"test data", xxh3.HashSeed([]byte("test data"), Seed), 13226331709069118873},
		{"L[0..3]", l0123, 9143094415614847814},
		{"L[4..7]", l4567, 12124091508212882195},
		{"chain ours", ChainHash(l0123, l4567), 9510318385840434533},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("%s = %d, want %d", tc.name, tc.got, tc.want)
		}
	}
}

func TestHasherMatchesDirectChain(t *testing.T) {
	toks := []uint32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}
	var seqs []uint64
	h := Hasher{BlockSize: 4}
	h.Add(toks[:3], func(_, s uint64) { seqs = append(seqs, s) })
	h.Add(toks[3:10], func(_, s uint64) { seqs = append(seqs, s) })
	for _, tk := range toks[10:] {
		h.AddOne(tk, func(_, s uint64) { seqs = append(seqs, s) })
	}
	want := []uint64{4945711292740353085, 12583592247330656132}
	if len(seqs) != 3 || seqs[1] != want[0] || seqs[2] != want[1] || seqs[0] != 14643705804678351452 {
		t.Fatalf("seqs = %v", seqs)
	}
	if len(h.Pending()) != 1 {
		t.Fatalf("pending = %v", h.Pending())
	}
}
