package report

// Deployment says what was simulated: per pool the GPU, the parallelism,
// the timing model with how far it can be trusted, and how each GPU's
// memory divides (weights, KV cache, reserve, free). The simulator fills
// it from the config; the page shows it as the timing badge and the
// memory-fit lines.
type Deployment struct {
	Mode    string           `json:"mode"`
	Backend string           `json:"backend"`
	Model   string           `json:"model"`
	Pools   []PoolDeployment `json:"pools"`
}

// PoolDeployment is one pool's part of the deployment. Bytes are per GPU.
type PoolDeployment struct {
	Name          string  `json:"name"`
	Hardware      string  `json:"hardware"`
	Replicas      int     `json:"replicas"`
	Tensor        int     `json:"tensor"`
	AttentionData int     `json:"attention_data"`
	GPUsPerWorker int     `json:"gpus_per_worker"`
	Timing        string  `json:"timing"`     // default | polynomial | fixed | profile
	Validation    string  `json:"validation"` // timing.Validation
	Capacity      string  `json:"capacity"`   // default | fixed
	KVBlocks      int     `json:"kv_blocks"`  // per attention rank
	BlockSize     int     `json:"block_size"`
	GPUBytes      float64 `json:"gpu_memory_bytes"`
	WeightsBytes  float64 `json:"weights_bytes"`
	KVBytes       float64 `json:"kv_cache_bytes"`
	ReserveBytes  float64 `json:"reserve_bytes"`
	FreeBytes     float64 `json:"free_bytes"` // negative: it does not fit
	Fits          bool    `json:"fits"`
}

// SLAInfo is the SLA a run's goodput was measured against (null: unset).
type SLAInfo struct {
	TTFTMs *float64 `json:"ttft_ms"`
	ITLMs  *float64 `json:"itl_ms"`
	E2EMs  *float64 `json:"e2e_ms"`
}

func (s SLA) info() *SLAInfo {
	if s == (SLA{}) {
		return nil
	}
	pos := func(v float64) *float64 {
		if v > 0 {
			return &v
		}
		return nil
	}
	return &SLAInfo{TTFTMs: pos(s.TTFTMs), ITLMs: pos(s.ITLMs), E2EMs: pos(s.E2EMs)}
}
