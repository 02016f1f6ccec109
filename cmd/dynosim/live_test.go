package main

import (
	"strings"
	"testing"
)

// dynosim live refuses bad usage and bad inputs with exit status 2 and one
// line that names them, before it listens.
func TestLiveBadUsage(t *testing.T) {
	dir := t.TempDir()
	bad := write(t, dir, "bad.yaml", "engine: {bogus: 1}\n")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"live", "--bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"live", "extra"}, `unexpected argument "extra"`},
		{[]string{"live", "--kv-events-replay-endpoint", "tcp://127.0.0.1:0"}, "needs --kv-events-endpoint"},
		{[]string{"live", "-c", bad}, "bad.yaml:1: engine.bogus: unknown key"},
		{[]string{"live", "-c", dir + "/missing.yaml"}, "missing.yaml"},
		{[]string{"live", "--speedup", "-2"}, "--speedup: must be between 0.001 and 1000"},
		{[]string{"live", "--set", "engine.workers.aggregated.parallelism.replicas=0"}, "replicas"},
		{[]string{"live", "--kv-events-endpoint", "nope://x"}, "--kv-events-endpoint"},
		{[]string{"live", "--addr", "256.0.0.1:1"}, "live: listen"},
		// Issue 29 item 3: the in-flight bytes cannot be below one body.
		{[]string{"live", "--max-inflight-bytes", "1000"}, "--max-inflight-bytes: must be ≥ 8388608"},
		// Issue 29 item 4: the connection limits are refused, not ignored.
		{[]string{"live", "--read-timeout", "0s"}, "--read-timeout: must be > 0"},
		{[]string{"live", "--idle-timeout", "-1s"}, "--idle-timeout: must be > 0"},
		{[]string{"live", "--max-connections", "-1"}, "--max-connections: must be ≥ 0"},
	} {
		_, stderr, code := runMain(t, tc.args...)
		if code != 2 || !strings.Contains(stderr, "dynosim: ") || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}
