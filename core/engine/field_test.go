package engine

import (
	"errors"
	"testing"
)

// The front ends map FieldError.Field to their own paths: the keys are a
// contract.
func TestValidateSettingsFieldKeys(t *testing.T) {
	ok := Config{BlockSize: DefaultBlockSize(VLLM)}
	for _, tc := range []struct {
		edit  func(*Config)
		field string
	}{
		{func(c *Config) { c.BlockSize = 1 }, "block_size"},
		{func(c *Config) { c.Policy, c.BlockSize = SGLang, 0 }, "block_size"},
		{func(c *Config) { c.MaxBatchedTokens = -1 }, "max_batched_tokens"},
		{func(c *Config) { c.MaxSeqs = -1 }, "max_sequences"},
		{func(c *Config) { c.MaxModelLen = -1 }, "max_model_len"},
		{func(c *Config) { c.Policy, c.MaxModelLen = TRTLLM, 8 }, "max_model_len"},
		{func(c *Config) { c.Spec.NextN = 6 }, "num_speculative_tokens"},
		{func(c *Config) { c.Spec = Speculation{NextN: 2, AcceptRates: []float64{0.5, 2}} }, "acceptance_rates[1]"},
		{func(c *Config) { c.Spec.NextN, c.Scale.DecodeSpeedup = 1, 2 }, "decode_speedup"},
		{func(c *Config) { c.Policy, c.BlockSize, c.SGLang.ChunkedPrefillSize = SGLang, 3, 8 }, "sglang.chunked_prefill_size"},
		{func(c *Config) { c.Policy, c.SGLang.Conservativeness = SGLang, 2 }, "sglang.schedule_conservativeness"},
	} {
		c := ok
		tc.edit(&c)
		var fe *FieldError
		if err := c.ValidateSettings(); !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("%s: got %v", tc.field, err)
		}
	}
	if err := ok.ValidateSettings(); err != nil {
		t.Fatal(err)
	}
	if d := DefaultBlockSize(SGLang); d != 1 || DefaultBlockSize(TRTLLM) != 32 || DefaultBlockSize(VLLM) != 64 {
		t.Fatal("default block sizes")
	}
}
