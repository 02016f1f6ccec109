package sim_test

import (
	"fmt"
	"log"

	"github.com/dynosim/dynosim-web/core/report/schema"
	"github.com/dynosim/dynosim-web/core/sim"
)

// exampleConfig is a tiny synthetic workload (8 requests of 512 prompt
// and 16 output tokens, 4 clients at a time) on one aggregated vLLM worker
// priced by the polynomial timing, which needs no GPU or model catalog.
const exampleConfig = `
traffic:
  source: {type: synthetic, input_tokens: 512, output_tokens: 16}
  load: {type: concurrency, concurrency: 4}
  stop: {requests: 8}
engine:
  workers:
    aggregated: {kv_cache: {capacity: {blocks: 1000}}, timing: {type: polynomial}}
`

// Prepare parses the config and builds its workload once; Run replays it
// on fresh engines and returns the report. The figures are rounded: the
// report's own precision is a nanosecond.
func ExamplePrepare() {
	p, err := sim.Prepare(sim.Inputs{Config: []byte(exampleConfig), ConfigName: "example.yaml"})
	if err != nil {
		log.Fatal(err)
	}
	rep, err := p.Run(nil, nil)
	if err != nil {
		log.Fatal(err)
	}
	s := rep.Summary
	fmt.Printf("completed %.0f requests in %.1f ms\n", s[schema.CompletedRequests], s[schema.DurationMs])
	fmt.Printf("mean TTFT %.2f ms, mean TPOT %.2f ms\n", s[schema.TTFT.Key(schema.Mean)], s[schema.TPOT.Key(schema.Mean)])
	// Output:
	// completed 8 requests in 337.7 ms
	// mean TTFT 56.80 ms, mean TPOT 7.47 ms
}

// One Prepared value serves many runs (safe from many goroutines): each
// Run applies its overrides (PATH=VALUE, like --set) after the inputs' own.
func ExamplePrepared_Run() {
	p, err := sim.Prepare(sim.Inputs{Config: []byte(exampleConfig)})
	if err != nil {
		log.Fatal(err)
	}
	for _, clients := range []string{"1", "8"} {
		rep, err := p.Run([]string{"traffic.load.concurrency=" + clients}, nil)
		if err != nil {
			log.Fatal(err)
		}
		s := rep.Summary
		fmt.Printf("concurrency %s: duration %.1f ms, mean TTFT %.2f ms\n", clients, s[schema.DurationMs], s[schema.TTFT.Key(schema.Mean)])
	}
	// Output:
	// concurrency 1: duration 985.7 ms, mean TTFT 30.56 ms
	// concurrency 8: duration 232.0 ms, mean TTFT 94.85 ms
}
