package kv_test

import (
	"fmt"

	"github.com/dynosim/dynosim-web/kv"
)

// ExampleManager follows two requests through the G1 manager: the first
// computes a prompt of two full blocks and finishes, and the second, which
// shares that prompt, reuses its cached blocks instead of computing them.
func ExampleManager() {
	const blockSize = 4
	log := &kv.EventLog{}
	m := kv.NewManager(8, blockSize, true, log)

	// A request names its full blocks by chained hash (and local hash).
	prompt := []uint32{1, 2, 3, 4, 5, 6, 7, 8, 9}
	var seq, local []uint64
	h := kv.Hasher{BlockSize: blockSize}
	h.Add(prompt, func(l, s uint64) { local, seq = append(local, l), append(seq, s) })

	var first kv.Lease
	m.Allocate(&first, len(prompt), 0, seq)        // room for 9 tokens: 3 blocks
	m.Finalize(&first, 0, len(prompt), seq, local) // the 2 full blocks become findable
	fmt.Println("first holds", len(first.Slots), "blocks; active", m.Pool.Active())
	for _, e := range log.Drain() {
		fmt.Println("event:", e.Kind, len(e.Blocks), "blocks")
	}
	m.Release(&first) // finished: its full blocks stay cached, inactive
	fmt.Println("after release: active", m.Pool.Active(), "cached", m.Pool.Inactive())

	var second kv.Lease
	overlap, active := m.Match(seq)
	fmt.Println("second matches", overlap, "blocks,", active, "active")
	m.Allocate(&second, len(prompt), overlap, seq)
	fmt.Println("second holds", len(second.Slots), "blocks; active", m.Pool.Active())
	// Output:
	// first holds 3 blocks; active 3
	// event: stored 2 blocks
	// after release: active 0 cached 2
	// second matches 2 blocks, 0 active
	// second holds 3 blocks; active 3
}
