//go:build unix

package live

import "syscall"

// openFileLimit is the process's soft limit on open files (Go raises it to
// the hard limit at start-up).
func openFileLimit() (int, bool) {
	var r syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r) != nil {
		return 0, false
	}
	return int(min(r.Cur, 1<<30)), true
}
