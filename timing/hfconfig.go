package timing

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// ParseHFConfig reads a Hugging Face config.json into a ModelSpec. name
// (the file name) prefixes errors. Multimodal wrappers are read through
// their "text_config". Understood fields: num_hidden_layers, hidden_size,
// num_attention_heads, num_key_value_heads (or num_kv_heads), head_dim,
// intermediate_size, vocab_size, tie_word_embeddings, torch_dtype (or
// dtype), quantization_config.quant_method; MoE: num_experts /
// n_routed_experts / num_local_experts, num_experts_per_tok,
// moe_intermediate_size, n_shared_experts, first_k_dense_replace; MLA:
// kv_lora_rank, q_lora_rank, qk_nope_head_dim, qk_rope_head_dim,
// v_head_dim.
func ParseHFConfig(data []byte, name string) (ModelSpec, error) {
	var top map[string]any
	if err := json.Unmarshal(data, &top); err != nil {
		return ModelSpec{}, fmt.Errorf("%s: %v", name, err)
	}
	cfg := hfTextConfig(top)
	m, err := hfFields(cfg, name)
	if err != nil {
		return ModelSpec{}, err
	}
	if err := m.hfDerive(cfg, name); err != nil {
		return ModelSpec{}, err
	}
	m.hfPrecision(cfg)
	if err := m.hfCheck(name); err != nil {
		return ModelSpec{}, err
	}
	return m, nil
}

// hfTextConfig is the part of a config.json that describes the language
// model: a multimodal wrapper's "text_config", which takes the wrapper's
// dtype, quantization and embedding tie when it gives none of its own.
func hfTextConfig(top map[string]any) map[string]any {
	cfg := top
	if tc, ok := top["text_config"].(map[string]any); ok {
		cfg = tc
		for _, k := range []string{"torch_dtype", "dtype", "quantization_config", "tie_word_embeddings"} {
			if _, ok := cfg[k]; !ok {
				if v, ok := top[k]; ok {
					cfg[k] = v
				}
			}
		}
	}
	return cfg
}

// hfFields reads the integer fields, each under the first of its names
// present; the first malformed one is the error.
func hfFields(cfg map[string]any, name string) (ModelSpec, error) {
	var bad error
	num := func(keys ...string) int {
		for _, k := range keys {
			v, ok := cfg[k]
			if !ok || v == nil {
				continue
			}
			f, isNum := v.(float64)
			if !isNum || f != math.Trunc(f) || f < 0 || f > MaxHFField {
				if bad == nil {
					bad = fmt.Errorf("%s: %s: want a non-negative integer ≤ %d, got %v", name, k, MaxHFField, v)
				}
				return 0
			}
			return int(f)
		}
		return 0
	}
	m := ModelSpec{
		Layers:       num("num_hidden_layers", "n_layer", "num_layers"),
		Hidden:       num("hidden_size", "n_embd", "d_model"),
		Heads:        num("num_attention_heads", "n_head"),
		KVHeads:      num("num_key_value_heads", "num_kv_heads"),
		HeadDim:      num("head_dim"),
		Intermediate: num("intermediate_size", "ffn_hidden_size"),
		Vocab:        num("vocab_size"),

		Experts:         num("num_experts", "n_routed_experts", "num_local_experts"),
		ExpertsPerToken: num("num_experts_per_tok", "moe_topk"),
		MoEIntermediate: num("moe_intermediate_size"),
		SharedExperts:   num("n_shared_experts"),
		DenseLayers:     num("first_k_dense_replace"),

		KVLoraRank:    num("kv_lora_rank"),
		QLoraRank:     num("q_lora_rank"),
		QKNopeHeadDim: num("qk_nope_head_dim"),
		QKRopeHeadDim: num("qk_rope_head_dim"),
		VHeadDim:      num("v_head_dim"),
	}
	if bad != nil {
		return ModelSpec{}, bad
	}
	return m, nil
}

// hfDerive fills what the fields imply: the name, KV heads, MLA head size,
// expert sizes and the embedding tie.
func (m *ModelSpec) hfDerive(cfg map[string]any, name string) error {
	if s, ok := cfg["_name_or_path"].(string); ok {
		m.Name = s
	}
	if m.KVHeads == 0 {
		m.KVHeads = m.Heads // mocker.md §7.1 fallback
	}
	if m.IsMLA() {
		m.KVHeads = m.Heads
		m.HeadDim = m.QKNopeHeadDim + m.QKRopeHeadDim
	}
	if m.Experts > 0 && m.MoEIntermediate == 0 {
		m.MoEIntermediate = m.Intermediate // Mixtral: experts use intermediate_size
	}
	if m.Experts > 0 && m.ExpertsPerToken == 0 {
		return fmt.Errorf("%s: num_experts_per_tok: missing for a MoE model", name)
	}
	if v, ok := cfg["shared_expert_intermediate_size"].(float64); ok && v > 0 && m.MoEIntermediate > 0 && m.SharedExperts == 0 {
		m.SharedExperts = int(math.Round(v / float64(m.MoEIntermediate))) // Qwen2-MoE style
	}
	if t, ok := cfg["tie_word_embeddings"].(bool); ok {
		m.TiedEmbed = t
	}
	return nil
}

// hfPrecision sets the KV element size from the dtype and the weight
// element size from the quantization, if any.
func (m *ModelSpec) hfPrecision(cfg map[string]any) {
	dtype := ""
	for _, k := range []string{"torch_dtype", "dtype"} {
		if s, ok := cfg[k].(string); ok {
			dtype = s
			break
		}
	}
	m.KVBytes = dtypeBytes(dtype)
	m.WeightBytes = float64(m.KVBytes)
	if q, ok := cfg["quantization_config"].(map[string]any); ok {
		method, _ := q["quant_method"].(string)
		bits, _ := q["bits"].(float64)
		switch {
		case strings.Contains(strings.ToLower(method), "fp8"):
			m.WeightBytes = 1
		case bits > 0:
			m.WeightBytes = bits / 8
		case strings.Contains(strings.ToLower(method), "fp4"), strings.Contains(strings.ToLower(method), "mxfp4"):
			m.WeightBytes = 0.5
		}
	}
}

// hfCheck validates the spec and bounds its KV bytes per token.
func (m *ModelSpec) hfCheck(name string) error {
	if err := m.Validate(); err != nil {
		return fmt.Errorf("%s: %v", name, err)
	}
	if m.HeadDim == 0 && !m.IsMLA() && m.Hidden%m.Heads != 0 {
		return fmt.Errorf("%s: hidden_size: %d is not divisible by num_attention_heads %d (give head_dim)", name, m.Hidden, m.Heads)
	}
	if kv := float64(m.Layers) * 2 * float64(m.Heads) * float64(max(m.HeadDim, m.KVLoraRank+m.QKRopeHeadDim, m.Hidden/m.Heads)) * float64(m.KVBytes); kv > 1<<40 {
		return fmt.Errorf("%s: the KV cache comes to %.3g bytes per token, more than 1 TiB", name, kv)
	}
	return nil
}

// MaxHFField bounds every integer field of a HF config.json (2^20): past
// any real model, and small enough that products of fields stay exact.
const MaxHFField = 1 << 20

// dtypeBytes maps a model dtype name to its element size as the reference
// does (mocker.md §7.1): float16/bfloat16 2, float32 4, float8 variants 1,
// anything else 2.
func dtypeBytes(s string) int {
	switch strings.ToLower(strings.TrimPrefix(s, "torch.")) {
	case "float32", "fp32":
		return 4
	case "float8_e4m3fn", "float8_e5m2", "fp8", "fp8_e4m3", "fp8_ds_mla", "fp8_inc", "int8":
		return 1
	}
	return 2
}
