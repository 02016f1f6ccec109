package promtest

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel kill Prometheus if the test binary dies
// without running its cleanups (a go test -timeout panic, a SIGKILL), which
// would otherwise leave a server listening after the test.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
