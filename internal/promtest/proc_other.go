//go:build !linux

package promtest

import "os/exec"

// dieWithParent is a no-op where the kernel offers no parent-death signal;
// there a test binary killed before its cleanups leaks the server.
func dieWithParent(*exec.Cmd) {}
