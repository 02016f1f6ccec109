package tiers

import (
	"strings"
	"testing"
)

// O7 of spec §10.6: the config derivation.
func TestResolveConfigDerivation(t *testing.T) {
	s := DefaultSettings()
	s.BlockSize, s.BytesPerToken, s.G2Blocks = 64, 131072, 10000
	c, err := Resolve(s)
	if err != nil {
		t.Fatal(err)
	}
	if c.BlockBytes != 64*131072 || c.BatchBlocks != 32 {
		t.Errorf("block bytes %v, batch %d; want %d, 32", c.BlockBytes, c.BatchBlocks, 64*131072)
	}
	got := []float64{c.G1ToG2, c.G2ToG1, c.G2ToG3, c.G3ToG2, c.G2ToG4, c.G4ToG2}
	want := []float64{14, 14, 7, 7, 4, 4}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("bandwidths %v, want %v", got, want)
			break
		}
	}
	if c.G3Blocks != 0 || c.G4 {
		t.Errorf("G3 %d, G4 %v: want both off by default", c.G3Blocks, c.G4)
	}

	// Explicit knobs pass through; a zero batch is the default.
	s.BatchBlocks, s.G3Blocks, s.G4, s.G1ToG2, s.G3ToG2 = 0, 500, true, 25, 0
	if c, err = Resolve(s); err != nil {
		t.Fatal(err)
	}
	if c.BatchBlocks != 32 || c.G3Blocks != 500 || !c.G4 || c.G1ToG2 != 25 || c.G3ToG2 != 0 {
		t.Errorf("explicit knobs: %+v", c.Settings)
	}
}

func TestResolveRejects(t *testing.T) {
	base := func() Settings {
		s := DefaultSettings()
		s.BlockSize, s.BytesPerToken = 64, 131072
		return s
	}
	tests := []struct {
		name string
		edit func(*Settings)
		want string
	}{
		{"G3 without G2", func(s *Settings) { s.G3Blocks = 10 }, "g3: needs g2.blocks > 0"},
		{"G4 without G2", func(s *Settings) { s.G4 = true }, "g4: needs g2.blocks > 0"},
		{"G2 without bytes per token", func(s *Settings) { s.G2Blocks, s.BytesPerToken = 10, 0 }, "needs the KV bytes per token"},
		{"G3 without bytes per token", func(s *Settings) { s.G2Blocks, s.G3Blocks, s.BytesPerToken = 10, 10, 0 }, "needs the KV bytes per token"},
		{"negative G2", func(s *Settings) { s.G2Blocks = -1 }, "g2.blocks: must be in"},
		{"negative batch", func(s *Settings) { s.G2Blocks, s.BatchBlocks = 10, -1 }, "offload_batch_blocks: must be ≥ 0"},
		{"negative bandwidth", func(s *Settings) { s.G2Blocks, s.G2ToG1 = 10, -3 }, "g2.read_gb_per_second: must be 0 (instant) or in [0.001, 1e+06]"},
		{"bandwidth below the floor", func(s *Settings) { s.G2Blocks, s.G2ToG1 = 10, 1e-4 }, "g2.read_gb_per_second: must be 0 (instant) or in [0.001, 1e+06], got 0.0001"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := base()
			tc.edit(&s)
			_, err := Resolve(s)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
	// No tiers asked for: nothing to check against the model.
	s := base()
	s.BytesPerToken = 0
	if _, err := Resolve(s); err != nil {
		t.Errorf("no tiers: %v", err)
	}
}
