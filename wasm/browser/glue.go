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
