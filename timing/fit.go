package timing

import (
	"errors"
	"fmt"
)

// ErrDoesNotFit marks an error saying a worker cannot fit its GPU's memory
// (errors.Is), so a search can record the reason (kv_capacity).
var ErrDoesNotFit = errors.New("does not fit the GPU's memory")

// notFit is an error with its own message that Is ErrDoesNotFit.
type notFit struct{ msg string }

func (e notFit) Error() string        { return e.msg }
func (e notFit) Is(target error) bool { return target == ErrDoesNotFit }

// NotFit returns an error with the given message that Is ErrDoesNotFit.
func NotFit(format string, args ...any) error { return notFit{fmt.Sprintf(format, args...)} }

// MemoryFit is how one GPU's memory divides for a worker: weights, the KV
// pool, the runtime reserve and what is left (negative: it does not fit).
type MemoryFit struct {
	GPUBytes, WeightsBytes, KVBytes, ReserveBytes, FreeBytes float64
}

// Fits reports whether the worker fits in its GPU's memory.
func (f MemoryFit) Fits() bool { return f.FreeBytes >= 0 }

// Memory is the memory fit of a pool of blocks KV blocks of blockSize
// tokens per attention rank (each rank's pool is split over its tensor
// ranks, as the KV heads are). With pipeline > 1 it is the stage whose
// GPUs have the least memory left (pipelineMemory).
func (r *Roofline) Memory(blocks, blockSize int) MemoryFit {
	return r.MemoryReserve(blocks, blockSize, DefaultRuntimeReserveBytes)
}

// MemoryReserve is Memory with the runtime reserve given (SGLang's pool:
// SGLangNonTorchBytes, what it keeps for activations and CUDA graphs
// showing as free).
func (r *Roofline) MemoryReserve(blocks, blockSize int, reserve float64) MemoryFit {
	m := r.Model
	m.WeightBytes = r.weightBytes
	if r.Par.Pipeline > 1 {
		return pipelineMemory(r.GPU, m, r.Par, blocks, blockSize, reserve)
	}
	f := MemoryFit{
		GPUBytes:     r.GPU.MemoryBytes,
		WeightsBytes: WeightBytesPerGPU(m, r.Par),
		KVBytes:      float64(blocks) * float64(blockSize) * float64(KVBytesPerToken(r.Model, r.Par.Tensor)),
		ReserveBytes: reserve,
	}
	f.FreeBytes = f.GPUBytes - f.WeightsBytes - f.KVBytes - f.ReserveBytes
	return f
}

// The roofline's validation against public single-pass measurements
// (docs/timing.md; TestValidationTable keeps these true): how many rows
// are held to the goal and the worst of their errors, and how many more
// are shown unchecked.
const (
	RooflineChecked      = 6
	RooflineWorstPct     = 11.9
	RooflineUncheckedMax = 3
)

// Family is the GPU family a catalog GPU's validation is reported for.
func Family(gpu string) string {
	switch normName(gpu) {
	case "h100_sxm", "h200_sxm":
		return "Hopper"
	case "b200":
		return "Blackwell"
	}
	return normName(gpu)
}
