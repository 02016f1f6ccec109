package main

import (
	"fmt"
	"strings"
)

// oneLine folds an error message onto one line exactly as the CLI does, so
// the page and window.dynosim.run show the CLI's error text (without its
// "dynosim: " program-name prefix).
func oneLine(msg string) string { return strings.Join(strings.Fields(msg), " ") }

func panicMessage(r any) string {
	return oneLine(fmt.Sprintf("internal error: %v", r))
}

// Input limits. Go's wasm heap lives in a 4 GiB address space and a parsed
// trace takes more memory than its text, so a larger file would end in an
// out-of-memory crash of the simulator rather than an error. The CLI has no
// such limit.
const (
	maxTrace   = 512 << 20
	maxProfile = 256 << 20
	maxConfig  = 16 << 20
)

// checkSize returns the error for an input of size bytes over limit, naming
// the file (what) and the way out.
func checkSize(what string, size, limit int) error {
	if size <= limit {
		return nil
	}
	return fmt.Errorf("%s: %.1f MiB is more than the page takes (%d MiB); replay it with the CLI (dynosim predict)",
		what, float64(size)/(1<<20), limit>>20)
}
