//go:build !(js && wasm)

package main

import (
	"flag"
	"fmt"
	"net/http"
	"os"
	"time"
)

// The native build serves the same handler with an in-memory store, for
// debugging without workerd: go run ./wasm/worker -addr 127.0.0.1:8787
func main() {
	addr := flag.String("addr", "127.0.0.1:8787", "listen address")
	budget := flag.Int("cpu-budget-ms", DefaultCPUBudgetMs, "CPU budget per run that sets the request and pass caps (0: unlimited)")
	maxBody := flag.Int64("max-body-bytes", DefaultMaxBodyBytes, "request body cap")
	maxConfig := flag.Int64("max-config-bytes", DefaultMaxConfigBytes, "cap on the config and set fields")
	bodyTimeout := flag.Duration("body-timeout", DefaultBodyTimeout, "request body read deadline")
	page := flag.String("page-url", "", "the DynoSim page that renders shared runs (PAGE_URL)")
	flag.Parse()
	h := NewHandler(newMemStore(), Options{
		MaxBodyBytes: *maxBody, MaxConfigBytes: *maxConfig, BodyTimeout: *bodyTimeout,
		Limits: LimitsForBudget(*budget), Clock: time.Now, PageURL: *page,
	})
	fmt.Fprintf(os.Stderr, "dynosim worker (native, in-memory store) on http://%s\n", *addr)
	if err := http.ListenAndServe(*addr, h); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
}
