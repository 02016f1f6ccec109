package sim

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/dynosim/dynosim-web/core/config"
	"github.com/dynosim/dynosim-web/core/engine"
	"github.com/dynosim/dynosim-web/core/replay"
	"github.com/dynosim/dynosim-web/core/workload"
)

// MemoryBudget bounds the simulator state one run may build, as estimated
// before anything is built (checkMemory). The page runs the simulator in
// WebAssembly, whose linear memory ends at 4 GiB, and Go's collector lets
// the heap grow to twice the live state before it collects (GOGC=100):
// 1 GiB of engines, pools and requests in flight peaks near 2 GiB, which
// leaves room for the workload, the report and the module itself.
const MemoryBudget = 1 << 30

// What the state costs, measured with runtime.MemStats (live heap after a
// collection, amd64; js/wasm is a 64-bit target with the same layouts;
// TestItem9EstimateBoundsMeasuredHeap keeps the estimate above what runs
// hold) and rounded up 1.4 to 2.5 times: tables grow by doubling, so an
// old and a new one coexist for a moment, which the samples miss.
const (
	// An engine core (one DP rank) with nothing in it, with its worker's
	// share of the router and the loop: 1.6 KiB measured (1.9 KiB behind
	// the KV router).
	rankBytes = 4 << 10
	// A G1 block once a run has used it: slot, free-stack entry, hash-index
	// entries (kv.Pool 65–71 B, kv.LineagePool 78 B), and its entry in the
	// KV router's index when workers publish events (+32 B).
	blockBytes, blockEventBytes = 160, 64
	// An SGLang page once used: its radix-tree share (14–16 B), and with
	// KV events its block hash and the router's index entry (90–92 B in
	// all).
	pageBytes, pageEventBytes = 32, 96
	// A request an engine holds: its record, and per block (page) of its
	// prompt and output what indexes it: sequence and local hashes under
	// vLLM (22 B measured), page keys under SGLang (12 B), and their block
	// hashes and the router's share when SGLang publishes events (47–56 B).
	seqBytes                                       = 1 << 10
	seqBlockBytes, seqPageBytes, seqPageEventBytes = 32, 24, 64
)

// ErrMemoryBudget marks a run refused because its estimated state is past
// MemoryBudget. It is a config.ErrUnsupported too: a deployment and
// workload this large is a combination the simulator does not run, so a
// search records the candidate as infeasible (backend_topology) with the
// message as its reason, and goes on.
var ErrMemoryBudget = errors.New("over the simulator's memory budget")

type memoryError struct{ msg string }

func (e *memoryError) Error() string { return e.msg }

func (e *memoryError) Is(target error) bool {
	return target == ErrMemoryBudget || target == config.ErrUnsupported
}

// memTerm is one part of a run's estimated state, named by its keys, with
// what would make it smaller.
type memTerm struct {
	what, fix string
	bytes     float64
}

// poolMemory is the estimated state of one pool: its engine cores, the KV
// blocks they can come to hold (their capacity, or what the workload can
// fill when that is less: pools allocate a block on first use) and the
// requests a closed-loop load keeps in them.
func poolMemory(cfg *config.Config, r role, ec *engine.Config, wl *workload.Workload) []memTerm {
	workers, key, fix := r.Parallelism.Replicas, r.path+".parallelism.replicas", "give fewer replicas"
	if cfg.Planner.Policy == "enabled" {
		// The planner may add workers up to its GPU ceiling.
		if n := cfg.Planner.MaxNumGPUs / max(r.GPUs(), 1); n > workers {
			workers, key, fix = n, "planner.max_num_gpus", "give a lower planner.max_num_gpus"
		}
	}
	ranks, of := r.Parallelism.AttentionData, "attention_data"
	if pp := r.Parallelism.Pipeline; pp > 1 {
		ranks, of = ranks*pp, "attention_data × pipeline" // a pipeline's virtual engines are cores too
	}
	cores := float64(workers) * float64(ranks)
	terms := []memTerm{{
		what:  fmt.Sprintf("%s × %s.parallelism.%s: %d workers × %d ranks = %.0f engine cores", key, r.path, of, workers, ranks, cores),
		fix:   fix + " or attention_data ranks",
		bytes: cores * rankBytes,
	}}

	per, seq, unit := float64(blockBytes), float64(seqBlockBytes), "KV blocks"
	if ec.Policy == engine.SGLang {
		per, seq, unit = pageBytes, seqPageBytes, "KV pages"
		if ec.Events {
			per, seq = per+pageEventBytes, seq+seqPageEventBytes
		}
	} else if ec.Events {
		per += blockEventBytes
	}
	blocks := cores * float64(ec.NumBlocks)
	fill := fmt.Sprintf("%.0f engine cores × %d", cores, ec.NumBlocks)
	w := workloadBlocks(wl, ec.BlockSize, ec.Spec.NextN)
	if wl != nil && w.all < blocks {
		blocks, fill = w.all, "as many as the workload's requests can fill"
	}
	terms = append(terms, memTerm{
		what:  fmt.Sprintf("%s.kv_cache.capacity: %.0f %s of %d tokens, %s", r.path, blocks, unit, ec.BlockSize, fill),
		fix:   "give a smaller kv_cache.capacity, a larger kv_cache.block_size, fewer replicas or fewer or shorter requests",
		bytes: blocks * per,
	})

	if ld := loadKind(cfg); wl != nil && ld.Kind == replay.Concurrency {
		// At most concurrency requests are in the engines at once; an
		// open-loop load's backlog depends on the engines' speed, which
		// no estimate made before the run knows.
		n := float64(min(ld.Concurrency, w.turns))
		b := min(n*w.most, w.all)
		terms = append(terms, memTerm{
			what:  fmt.Sprintf("traffic.load.concurrency: %.0f requests in the %s engines, of up to %.0f blocks each", n, r.name, w.most),
			fix:   "give a lower traffic.load.concurrency or shorter requests",
			bytes: n*seqBytes + b*seq,
		})
	}
	return terms
}

// blockCounts are a workload's requests measured in blocks of one size.
type blockCounts struct {
	turns int
	all   float64 // the blocks of every request (each also with a speculative burst and one spare)
	most  float64 // the blocks of the largest request
}

func workloadBlocks(wl *workload.Workload, bs, nextN int) blockCounts {
	var c blockCounts
	if wl == nil || bs < 1 {
		return c
	}
	for i := range wl.Sessions {
		for _, t := range wl.Sessions[i].Turns {
			n := float64((t.Input+t.Output+nextN+bs)/bs + 1)
			c.turns++
			c.all += n
			c.most = max(c.most, n)
		}
	}
	return c
}

// checkMemory refuses a run whose estimated state (poolMemory over every
// pool) is past MemoryBudget, or past a service's limit (Limits.MaxStateBytes,
// ErrTooLarge), naming the keys of its largest parts.
func checkMemory(name string, terms []memTerm, limit int64) error {
	total := 0.0
	for _, t := range terms {
		total += t.bytes
	}
	budget := float64(MemoryBudget)
	if limit > 0 && float64(limit) < budget {
		budget = float64(limit)
	}
	if total <= budget {
		return nil
	}
	slices.SortStableFunc(terms, func(a, b memTerm) int {
		switch {
		case a.bytes > b.bytes:
			return -1
		case a.bytes < b.bytes:
			return 1
		}
		return 0
	})
	// The parts that matter: the largest, and any other of at least a
	// tenth of the whole.
	var parts []string
	for i, t := range terms {
		if i == 3 || i > 0 && t.bytes < total/10 {
			break
		}
		parts = append(parts, fmt.Sprintf("%s: %s", t.what, byteSize(t.bytes)))
	}
	if total <= MemoryBudget {
		return fmt.Errorf("%w: %s: the run would build about %s of simulator state, this service runs at most %s (%s) (use the CLI or the page for large runs)",
			ErrTooLarge, name, byteSize(total), byteSize(budget), strings.Join(parts, "; "))
	}
	return &memoryError{fmt.Sprintf("%s: the run would build about %s of simulator state, more than the %s a run may use (%s); %s",
		name, byteSize(total), byteSize(MemoryBudget), strings.Join(parts, "; "), terms[0].fix)}
}

// byteSize formats n bytes in binary units.
func byteSize(n float64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", n/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", n/(1<<20))
	}
	return fmt.Sprintf("%.0f KiB", n/(1<<10))
}
