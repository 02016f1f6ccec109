package tiers

import (
	"errors"
	"fmt"
)

// Settings are the lower-tier knobs of one worker role (spec §5.1), as a
// user gives them; DefaultSettings holds every default.
type Settings struct {
	BlockSize     int     // tokens per block (the engine's block_size)
	BytesPerToken float64 // KV bytes per token; 0: unknown
	BatchBlocks   int     // offload batch; 0: DefaultBatchBlocks
	G2Blocks      int     // per worker; 0: no lower tiers
	G3Blocks      int     // shared; 0: no G3
	G4            bool    // shared, unbounded object store
	// Link bandwidths in 10^9 bytes/s; ≤ 0 is infinite (instant copies).
	G1ToG2, G2ToG1 float64 // G2 write and read
	G2ToG3, G3ToG2 float64 // G3 write and read
	G2ToG4, G4ToG2 float64 // G4 write and read
	// WriteThrough (offload: on_store) copies every block G1 stores down to
	// G2 eagerly instead of when G1 evicts it (store.go).
	WriteThrough bool
}

// The defaults of spec §5.1.
const (
	DefaultBatchBlocks = 32
	HostGBps           = 14.0 // G1↔G2: host DRAM over PCIe
	DiskGBps           = 7.0  // G2↔G3: one local NVMe
	ObjectGBps         = 4.0  // G2↔G4: an object tier
)

// DefaultSettings are the defaults: no tiers, spec §5.1's bandwidths.
func DefaultSettings() Settings {
	return Settings{
		BatchBlocks: DefaultBatchBlocks,
		G1ToG2:      HostGBps, G2ToG1: HostGBps,
		G2ToG3: DiskGBps, G3ToG2: DiskGBps,
		G2ToG4: ObjectGBps, G4ToG2: ObjectGBps,
	}
}

// Config is a resolved tier configuration.
type Config struct {
	Settings
	BlockBytes float64 // BlockSize × BytesPerToken
}

// Enabled reports whether s asks for lower tiers at all.
func (s *Settings) Enabled() bool { return s.G2Blocks > 0 || s.G3Blocks > 0 || s.G4 }

// MaxBlocks bounds a tier's capacity (its bookkeeping grows with use, but a
// count past it is a typo, not a host).
const MaxBlocks = 1 << 30

// The bounds of a tier link's bandwidth (GB/s; 0 means instant). Below a
// megabyte a second no storage link is real (a remote object store streams
// hundreds of MB/s), and a block copy would price in hours to centuries:
// the run then reaches the clock's horizon instead of answering
// (issue 29 item 10). Above a petabyte a second nothing is either.
const (
	MinGBps = 1e-3
	MaxGBps = 1e6
)

// Resolve checks s and derives the block size in bytes. Errors name the
// setting (g2.blocks, g3.blocks, offload_batch_blocks, …). Lower tiers need
// G2 (G3 and G4 hits stage through it) and a known KV size per token.
func Resolve(s Settings) (Config, error) {
	switch {
	case s.G2Blocks < 0 || s.G2Blocks > MaxBlocks:
		return Config{}, fmt.Errorf("g2.blocks: must be in [0, %d], got %d", MaxBlocks, s.G2Blocks)
	case s.G3Blocks < 0 || s.G3Blocks > MaxBlocks:
		return Config{}, fmt.Errorf("g3.blocks: must be in [0, %d], got %d", MaxBlocks, s.G3Blocks)
	case s.BatchBlocks < 0:
		return Config{}, fmt.Errorf("offload_batch_blocks: must be ≥ 0 (0 = %d), got %d", DefaultBatchBlocks, s.BatchBlocks)
	case s.G3Blocks > 0 && s.G2Blocks == 0:
		return Config{}, errors.New("g3: needs g2.blocks > 0 (G3 hits stage through the host tier)")
	case s.G4 && s.G2Blocks == 0:
		return Config{}, errors.New("g4: needs g2.blocks > 0 (G4 hits stage through the host tier)")
	case s.Enabled() && !(s.BytesPerToken > 0):
		return Config{}, errors.New("needs the KV bytes per token (the model gives none; set engine.kv_transfer.bytes_per_token)")
	}
	for _, l := range []struct {
		name string
		v    float64
	}{
		{"g2.write_gb_per_second", s.G1ToG2}, {"g2.read_gb_per_second", s.G2ToG1},
		{"g3.write_gb_per_second", s.G2ToG3}, {"g3.read_gb_per_second", s.G3ToG2},
		{"g4.write_gb_per_second", s.G2ToG4}, {"g4.read_gb_per_second", s.G4ToG2},
	} {
		if !(l.v == 0 || l.v >= MinGBps && l.v <= MaxGBps) {
			return Config{}, fmt.Errorf("%s: must be 0 (instant) or in [%g, %g], got %v", l.name, MinGBps, MaxGBps, l.v)
		}
	}
	if s.BatchBlocks == 0 {
		s.BatchBlocks = DefaultBatchBlocks
	}
	return Config{Settings: s, BlockBytes: float64(s.BlockSize) * s.BytesPerToken}, nil
}
