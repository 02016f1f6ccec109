package timing

// gpuSources names, for every gpuCatalog entry, the public documents its
// numbers come from (catalog.go's comment derives each figure from them).
// TestItem33_7GPUSources fails when an entry has none, or when a name here
// is not in the catalog.
var gpuSources = map[string][]string{
	"h100_sxm": {
		"NVIDIA H100 Tensor Core GPU datasheet, H100 SXM column (https://www.nvidia.com/en-us/data-center/h100/)",
	},
	"h200_sxm": {
		"NVIDIA H200 Tensor Core GPU datasheet (https://www.nvidia.com/en-us/data-center/h200/)",
	},
	"b200": {
		"NVIDIA DGX B200 datasheet, per-system figures divided by its 8 GPUs (https://www.nvidia.com/en-us/data-center/dgx-b200/)",
	},
	"a100_80gb": {
		"NVIDIA A100 Tensor Core GPU datasheet, A100 80GB SXM column (https://www.nvidia.com/en-us/data-center/a100/)",
	},
	"a100_40gb": {
		"NVIDIA A100 Tensor Core GPU datasheet, A100 40GB SXM column (https://www.nvidia.com/en-us/data-center/a100/)",
	},
	"l40s": {
		"NVIDIA L40S GPU datasheet (https://www.nvidia.com/en-us/data-center/l40s/)",
	},
	"rtx_4090": {
		"NVIDIA Ada Lovelace GPU architecture whitepaper, GeForce RTX 4090 table (https://images.nvidia.com/aem-dam/Solutions/geforce/ada/nvidia-ada-gpu-architecture.pdf)",
		"NVIDIA/nccl-tests issue #74: no peer-to-peer on GeForce boards (https://github.com/NVIDIA/nccl-tests/issues/74)",
		"tinygrad/open-gpu-kernel-modules: P2P disabled in NVIDIA's driver for GeForce (https://github.com/tinygrad/open-gpu-kernel-modules)",
	},
	"rtx_pro_6000": {
		"NVIDIA RTX PRO 6000 Blackwell Workstation Edition datasheet (https://www.nvidia.com/en-us/products/workstations/professional-desktop-gpus/rtx-pro-6000/)",
	},
	"rtx_pro_6000_server": {
		"NVIDIA RTX PRO 6000 Blackwell Server Edition product page and datasheet (https://www.nvidia.com/en-us/data-center/rtx-pro-6000-blackwell-server-edition/)",
		"ai-dynamo/aiconfigurator src/aiconfigurator/systems/rtx_pro_6000_server.yaml: nvidia-smi memory (97,887 MiB), 600 W limit and 2,430 MHz SM clock of the measured Server box (https://github.com/ai-dynamo/aiconfigurator)",
	},
}

// GPUSources returns the public sources of a catalog GPU's figures (name
// normalised as by LookupGPU); nil for a GPU not in the catalog.
func GPUSources(name string) []string {
	return append([]string(nil), gpuSources[normName(name)]...)
}
