package main

// The quick form's model and GPU choices: the names of the core's catalogs
// (timing.ModelNames and timing.GPUNames). ui.wasm links no simulator
// code, so the names are copied here; TestItem32_6CatalogMatchesTiming
// fails, printing the lists to paste, when the catalogs change.
var (
	catalogModels = []string{"deepseek-v3", "llama-2-7b", "llama-3.1-70b", "llama-3.1-8b", "llama-4-scout-17b-16e", "mistral-7b", "mistral-nemo-12b", "qwen2.5-7b", "qwen3-235b-a22b", "qwen3-30b-a3b", "qwen3-32b", "yi-34b"}
	catalogGPUs   = []string{"a100_40gb", "a100_80gb", "b200", "h100_sxm", "h200_sxm", "l40s", "rtx_4090", "rtx_pro_6000", "rtx_pro_6000_server"}
)
