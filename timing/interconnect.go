package timing

import (
	"math"
	"strconv"
)

// Fabric is how a worker's GPUs talk to each other. NVLink is split by
// generation because the measured all-reduce floors and bandwidth fractions
// differ by more than our ±15 % budget between A100, H100/H200 and B200 (see
// allReduceRows); PCIe is split by whether GPU peer-to-peer (P2P) works,
// because without it NCCL stages every byte through host memory and vLLM
// turns its custom all-reduce off.
//
// The zero value is FabricPCIeP2P, the datacenter PCIe card.
type Fabric uint8

const (
	// FabricPCIeP2P: PCIe with GPU peer-to-peer (L40S, RTX PRO 6000).
	FabricPCIeP2P Fabric = iota
	// FabricPCIeNoP2P: PCIe with P2P disabled by the driver (GeForce cards
	// such as the RTX 4090): NCCL falls back to its shared-memory transport.
	FabricPCIeNoP2P
	// FabricNVLink3: A100 SXM, NVLink 3 through NVSwitch (DGX/HGX A100).
	FabricNVLink3
	// FabricNVLink4: H100/H200 SXM, NVLink 4 through NVSwitch.
	FabricNVLink4
	// FabricNVLink5: B200, NVLink 5 through NVSwitch.
	FabricNVLink5
)

var fabricNames = [...]string{
	FabricPCIeP2P:   "pcie-p2p",
	FabricPCIeNoP2P: "pcie-no-p2p",
	FabricNVLink3:   "nvlink3",
	FabricNVLink4:   "nvlink4",
	FabricNVLink5:   "nvlink5",
}

func (f Fabric) String() string {
	if int(f) < len(fabricNames) {
		return fabricNames[f]
	}
	return "fabric(" + strconv.Itoa(int(f)) + ")"
}

// NVLink reports whether f is an NVLink (NVSwitch) fabric.
func (f Fabric) NVLink() bool { return f >= FabricNVLink3 && f <= FabricNVLink5 }

// vLLM's custom all-reduce (vllm/distributed/device_communicators/
// custom_all_reduce.py) takes a message only if it is smaller than
// max_size=8192*1024 bytes (`inp_size < self.max_size`), the world size is
// one of _SUPPORTED_WORLD_SIZES = [2, 4, 6, 8], the GPUs pass its P2P check,
// and either world_size == 2 or the GPUs are fully connected by NVLink ("not
// supported on more than two PCIe-only GPUs"). Everything else goes to
// (py)NCCL. The kernel (csrc/custom_all_reduce.cuh) is one-shot for 2 GPUs,
// or for ≤ 4 GPUs under 512 KiB, or ≤ 8 GPUs under 256 KiB, and two-shot
// otherwise.
//
// Not modelled: current vLLM defaults VLLM_ALLREDUCE_USE_SYMM_MEM to 1
// (vllm/envs.py), which on SM90/SM100 lowers the custom cap
// (all_reduce_utils.py CUSTOM_ALL_REDUCE_MAX_SIZES: 256 KiB for 8 H100s,
// 1–2 MiB on B200) and hands mid and large messages to torch
// symmetric-memory all-reduce. The vllm_graph rows we fit below 8 MiB already
// include that path; above 8 MiB we price NCCL (nccl-tests), which AIC's
// tables show is up to 1.6× (H100/H200 TP8) and 2× (B200 TP4/TP8) slower
// than what vLLM 0.24 runs at 8 MiB, converging by 128 MiB.
const customARMaxBytes = 8192 * 1024

// usesCustomAR reports whether vLLM would run this all-reduce with its own
// kernel rather than NCCL.
func usesCustomAR(f Fabric, tp int, bytes float64) bool {
	if bytes >= customARMaxBytes {
		return false
	}
	switch {
	case f.NVLink():
		return tp == 2 || tp == 4 || tp == 6 || tp == 8
	case f == FabricPCIeP2P:
		return tp == 2
	}
	return false // no P2P: vLLM's P2P check disables the custom kernel
}

func customAROneShot(tp int, bytes float64) bool {
	return tp == 2 || (tp <= 4 && bytes < 512<<10) || (tp <= 8 && bytes < 256<<10)
}

// allReduceRow prices all-reduce on one fabric at one TP size. Bandwidths
// are fractions of the caller's datasheet per-direction link rate (the
// catalog's LinkBW: 300/450/900 GB/s NVLink, 32 GB/s PCIe Gen4 x16, 64 GB/s
// Gen5 x16), so the fractions carry the protocol, kernel and topology losses.
type allReduceRow struct {
	// vLLM custom all-reduce under CUDA graphs: latency floor, the extra
	// latency of the two-shot path (a second pass and barrier), and the
	// achieved rate on the bytes the kernel reads: (tp−1)·bytes one-shot
	// (every rank reads every peer's buffer), 2(tp−1)/tp·bytes two-shot.
	caFloorUs, caTwoShotUs, caFrac float64
	// NCCL as two lines, latency + ring bytes 2(tp−1)/tp·bytes / rate, and
	// the faster one wins. This is how NCCL's own tuner (src/graph/
	// tuning.cc) picks among protocols and algorithms: a low-latency line
	// (LL/LL128, small messages) and a bandwidth line (Simple ring, or NVLS
	// on NVSwitch, whose "bus bandwidth" can exceed the link rate).
	ncLatUs, ncFrac, ncBigLatUs, ncBigFrac float64
	// eagerUs: the shortest time one all-reduce takes outside CUDA graphs,
	// where every call is dispatched from Python (CPU-bound for small
	// messages).
	eagerUs float64
}

// allReduceRows[fabric][i] is the row for TP 2, 4, 8 (i = 0, 1, 2).
//
// Sources, and how the numbers were fixed: rows for NVLink3/4/5 and
// PCIeP2P are robust least-squares fits on log error (then rounded) to
// AIConfigurator's measured tables in testdata/aic/allreduce.csv
// (ai-dynamo/aiconfigurator @ 095f58a5, Apache-2.0): the ca* columns to
// custom_allreduce_perf backend vllm_graph below 8 MiB, the nc* columns to
// nccl_perf (nccl-tests all_reduce_perf, half, out-of-place; 1 Ki–64 Mi
// elements, ≥ 8 MiB weighted 3×), eagerUs to the median of
// vllm_eager at 1–16 Ki elements. Systems per row: NVLink3 = a100_sxm (vLLM
// 0.14.0, NCCL 2.27.3; its 44–45 µs eager floor is that older vLLM's, twice
// what 0.24 shows on Hopper); NVLink4 = h100_sxm + h200_sxm (vLLM 0.24.0, NCCL
// 2.29.2); NVLink5 = b200_sxm (vLLM 0.24.0, NCCL 2.29.2); PCIeP2P TP2 =
// l40s + rtx_pro_6000_server, TP4/TP8 = rtx_pro_6000_server only (AIC's L40S
// box is excluded at 4 and 8 GPUs: its README notes 1.4 GB/s bus bandwidth at
// 8 GPUs, "a PCIe topology without usable P2P"), eagerUs from RTX PRO 6000
// (vLLM 0.24.0; the L40S vLLM table is 0.14.0 data, whose eager path was
// ~2× slower). TestAllReduceMatchesAIC checks every row against the same
// tables and TestAllReduceMatchesVidur against Vidur's independent
// profiles.
//
// Oddities the data forces, kept rather than smoothed: B200's TP2 caFrac is
// 0.13 because vLLM 0.24 on SM100 leaves the custom kernel at 2 MiB (symmetric
// memory takes over, 25 µs at 2 MiB); B200's floors are ~50 % above Hopper's;
// NVLink4 TP8's big-message fraction exceeds 1 because NCCL all-reduce uses
// NVLink SHARP there, whose bus bandwidth is not wire bandwidth (NCCL's
// maintainer: "On 8 GPUs, you should reach a peak busBw of ~480GB/s",
// NVIDIA/nccl-tests#212).
//
// PCIeNoP2P has no table to fit; its numbers are the published figures
// collected in the project's calibration notes (SOURCES.md §3):
// small-message nccl-tests time with P2P disabled (shared-memory transport)
// ≈ 8.4 µs on 2× RTX 4090 (tinygrad/open-gpu-kernel-modules#36/#45) and
// 42.14 µs on 8× RTX 4090 (NVIDIA/nccl#1530), TP4 interpolated linearly in
// ranks; one bus bandwidth, 0.375 × 32 GB/s = 12 GB/s, within 20 % of both
// bandwidth figures: ≈ 10 GB/s per direction per A40 pair with P2P disabled
// (NVIDIA/nccl-tests#74) and an average bus bandwidth of 6.13 GB/s over an
// 8 B–512 MB sweep on 8× L20 over SHM (NVIDIA/nccl#1817; the large-message
// rate behind that average is higher: ≈ 14–16 GB/s by our arithmetic,
// for a 30–60 µs floor). Its eager floors are
// PCIeP2P's: the CPU dispatch cost does not depend on the transport.
var allReduceRows = [...][3]allReduceRow{
	FabricNVLink3: {
		{caFloorUs: 5.2, caTwoShotUs: 0, caFrac: 0.69, ncLatUs: 10.9, ncFrac: 0.19, ncBigLatUs: 43.0, ncBigFrac: 0.63, eagerUs: 44},
		{caFloorUs: 5.5, caTwoShotUs: 4.9, caFrac: 0.65, ncLatUs: 15.0, ncFrac: 0.33, ncBigLatUs: 51.7, ncBigFrac: 0.71, eagerUs: 45},
		{caFloorUs: 6.2, caTwoShotUs: 9.0, caFrac: 0.90, ncLatUs: 22.2, ncFrac: 0.39, ncBigLatUs: 57.8, ncBigFrac: 0.68, eagerUs: 45},
	},
	FabricNVLink4: {
		{caFloorUs: 4.4, caTwoShotUs: 0, caFrac: 0.59, ncLatUs: 6.5, ncFrac: 0.24, ncBigLatUs: 18.9, ncBigFrac: 0.65, eagerUs: 21},
		{caFloorUs: 4.7, caTwoShotUs: 4.0, caFrac: 0.74, ncLatUs: 10.1, ncFrac: 0.40, ncBigLatUs: 24.6, ncBigFrac: 0.76, eagerUs: 21},
		{caFloorUs: 5.0, caTwoShotUs: 3.7, caFrac: 0.76, ncLatUs: 16.9, ncFrac: 0.52, ncBigLatUs: 74.2, ncBigFrac: 1.05, eagerUs: 22},
	},
	FabricNVLink5: {
		{caFloorUs: 6.6, caTwoShotUs: 0, caFrac: 0.13, ncLatUs: 10.5, ncFrac: 0.28, ncBigLatUs: 26.1, ncBigFrac: 0.62, eagerUs: 20},
		{caFloorUs: 7.1, caTwoShotUs: 9.0, caFrac: 0.46, ncLatUs: 15.7, ncFrac: 0.21, ncBigLatUs: 65.5, ncBigFrac: 0.83, eagerUs: 22},
		{caFloorUs: 7.9, caTwoShotUs: 8.6, caFrac: 0.89, ncLatUs: 26.2, ncFrac: 0.36, ncBigLatUs: 91.0, ncBigFrac: 0.85, eagerUs: 22},
	},
	FabricPCIeP2P: {
		{caFloorUs: 4.6, caTwoShotUs: 0, caFrac: 0.61, ncLatUs: 6.3, ncFrac: 0.33, ncBigLatUs: 21.7, ncBigFrac: 0.61, eagerUs: 21},
		{ncLatUs: 12.9, ncFrac: 0.26, ncBigLatUs: 25.3, ncBigFrac: 0.40, eagerUs: 29}, // vLLM: NCCL only
		{ncLatUs: 24.9, ncFrac: 0.16, ncBigLatUs: 76.8, ncBigFrac: 0.38, eagerUs: 31},
	},
	FabricPCIeNoP2P: {
		{ncLatUs: 8.4, ncFrac: 0.375, ncBigLatUs: 8.4, ncBigFrac: 0.375, eagerUs: 21},
		{ncLatUs: 19.6, ncFrac: 0.375, ncBigLatUs: 19.6, ncBigFrac: 0.375, eagerUs: 29},
		{ncLatUs: 42.1, ncFrac: 0.375, ncBigLatUs: 42.1, ncBigFrac: 0.375, eagerUs: 31},
	},
}

// allReduceRowFor returns the row for (f, tp). TP sizes without a row use the
// next measured size up (3 → 4, 5–7 → 8), which errs slow; above 8 the TP8
// row is used, i.e. one NVSwitch or PCIe domain — optimistic across nodes.
func allReduceRowFor(f Fabric, tp int) allReduceRow {
	switch {
	case tp <= 2:
		return allReduceRows[f][0]
	case tp <= 4:
		return allReduceRows[f][1]
	}
	return allReduceRows[f][2]
}

// AllReduceMs is the time of one all-reduce of bytes (the per-rank input
// tensor, e.g. tokens × hidden × 2 for bf16) over tp GPUs on the fabric.
// linkBW is the datasheet per-direction GPU link rate in bytes/s. graph says
// whether the step runs under CUDA graphs (decode) or eager (large
// prefills).
//
// It picks the implementation vLLM would (usesCustomAR) and prices it from
// allReduceRows. An eager call costs at least the row's eager floor
// (20–45 µs in AIC's vLLM tables). That floor is the CPU dispatch rate of
// back-to-back all-reduces; in a pass with enough GPU work queued behind
// it the CPU runs ahead and hides most of it, so there it is an upper
// bound. Unknown fabrics are priced as PCIe with P2P; a non-positive linkBW
// gives +Inf.
func AllReduceMs(f Fabric, linkBW float64, tp int, bytes float64, graph bool) float64 {
	if tp <= 1 || !(bytes > 0) {
		return 0
	}
	if !(linkBW > 0) {
		return math.Inf(1)
	}
	if int(f) >= len(allReduceRows) {
		f = FabricPCIeP2P
	}
	r := allReduceRowFor(f, tp)
	n := float64(tp)
	var us float64
	if usesCustomAR(f, tp, bytes) {
		moved := 2 * (n - 1) / n * bytes
		if customAROneShot(tp, bytes) {
			moved = (n - 1) * bytes
		} else {
			us += r.caTwoShotUs
		}
		us += r.caFloorUs + 1e6*moved/(r.caFrac*linkBW)
	} else {
		ring := 2 * (n - 1) / n * bytes
		us = min(r.ncLatUs+1e6*ring/(r.ncFrac*linkBW), r.ncBigLatUs+1e6*ring/(r.ncBigFrac*linkBW))
	}
	if !graph {
		us = max(us, r.eagerUs)
	}
	return us / 1000
}

// sendRecvRows: latency and achieved fraction of the link for one NCCL
// point-to-point transfer (pipeline-parallel activations).
//   - NVLink: 8 µs and 0.80, fitted to Vidur's intra-node H100 DGX
//     send_recv profile (microsoft/vidur @ 7d475133,
//     data/profiling/network/h100_dgx; 7.7 µs, 0.80 of 450 GB/s) and
//     matching NCCL's maintainer on NVLink 4: "450GB/s is the line rate.
//     With the protocol overhead (~20%) NCCL can get an effective NVLink
//     bandwidth of 370GB/s" (NVIDIA/nccl-tests#212). Vidur's A100 DGX
//     profile is bimodal (≈ 260 GB/s up to ~32 MiB, ≈ 222 GB/s above) and
//     only 63 % of it is within 15 %; B200 is unmeasured, assumed alike.
//   - PCIe with P2P: AIC's p2p_latency (10 µs, systems/<gpu>.yaml) and the
//     TP2 NCCL bandwidth fraction above (a 2-rank all-reduce streams its
//     bytes to the peer at the same per-direction rate). Not measured as
//     send/recv.
//   - PCIe without P2P: the 2-rank SHM small-message time (8.4 µs) and
//     ≈ 10 GB/s per direction for a P2P-disabled A40 pair
//     (NVIDIA/nccl-tests#74), 0.31 of 32 GB/s.
var sendRecvRows = [...]struct{ latUs, frac float64 }{
	FabricPCIeP2P:   {10, 0.61},
	FabricPCIeNoP2P: {8.4, 0.31},
	FabricNVLink3:   {8, 0.80},
	FabricNVLink4:   {8, 0.80},
	FabricNVLink5:   {8, 0.80},
}

// SendRecvMs is the time to send bytes from one GPU to another on the fabric
// (NCCL send/recv); linkBW as in AllReduceMs.
func SendRecvMs(f Fabric, linkBW, bytes float64) float64 {
	if !(bytes > 0) {
		return 0
	}
	if !(linkBW > 0) {
		return math.Inf(1)
	}
	if int(f) >= len(sendRecvRows) {
		f = FabricPCIeP2P
	}
	r := sendRecvRows[f]
	return (r.latUs + 1e6*bytes/(r.frac*linkBW)) / 1000
}
