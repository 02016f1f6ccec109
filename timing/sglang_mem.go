package timing

import "math"

// SGLangNonTorchBytes is the memory SGLang finds in use after loading the
// weights besides them (CUDA context, NCCL buffers): model_runner.py
// profile_max_num_token sizes the token pool as the memory left after the
// weights less total × (1 − mem_fraction_static), so activations and CUDA
// graphs live inside 1 − mem_fraction_static and this is the only reserve
// on top (an estimate: its startup logs show ≈ 0.5–1 GiB on Hopper;
// TestItem33_6SGLangTokenPool).
const SGLangNonTorchBytes = 1 << 30

// SGLangMemFractionStatic is SGLang's default --mem-fraction-static for a
// GPU of gpuBytes at tensor × pipeline parallelism, with activation
// tokens the chunked prefill size (max_prefill_tokens when chunking is
// off) and speculative a draft model (EAGLE/MTP). It follows
// sgl-project/sglang python/sglang/srt/server_args.py,
// ServerArgs._handle_gpu_memory_settings (PR #10975): a reserve in MiB of
// 512 for metadata, 1.5 per activation token (at least 2048 tokens),
// 2 per CUDA-graph batch slot (cuda_graph_max_bs by the GPU's memory
// bucket and TP: 8 below 20 GiB; 24, or 80 at TP ≥ 4, below 35 GiB; 32 or
// 160 below 60 GiB; 256 or 512 below 160 GiB; 512 above) and 1 GiB per
// 8 GPUs of tp × pp; at least 10 GiB on GPUs above 60 GiB; 2 GiB more for
// a draft model; the fraction is what is left, rounded to 3 places (0.835
// on an 80 GiB H100 at TP1, 0.907 on a 141 GB H200).
func SGLangMemFractionStatic(gpuBytes float64, tp, pp, activationTokens int, speculative bool) float64 {
	mib := gpuBytes / (1 << 20)
	reserved := 512 + 1.5*float64(max(activationTokens, 2048)) + 2*float64(sglangCUDAGraphMaxBS(mib, tp)) + float64(max(tp, 1)*max(pp, 1))/8*1024
	if mib > 60*1024 {
		reserved = max(reserved, 10*1024)
	}
	if speculative {
		reserved += 2 * 1024
	}
	return math.Round((mib-reserved)/mib*1000) / 1000
}

// sglangCUDAGraphMaxBS is SGLang's default cuda_graph_max_bs for a GPU of
// mib MiB at tensor parallelism tp (server_args.py, the same buckets).
func sglangCUDAGraphMaxBS(mib float64, tp int) int {
	small := tp < 4
	switch {
	case mib < 20*1024:
		return 8
	case mib < 35*1024:
		return map[bool]int{true: 24, false: 80}[small]
	case mib < 60*1024:
		return map[bool]int{true: 32, false: 160}[small]
	case mib < 160*1024:
		return map[bool]int{true: 256, false: 512}[small]
	}
	return 512
}
