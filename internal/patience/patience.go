// Package patience gives tests waits that end at the test binary's own
// deadline (go test -timeout), never at a fixed wall-clock bound: how long
// a goroutine takes to end or a state to change on a busy machine under
// -race is not what the tests that use it check, and a guess at it made
// them flaky.
package patience

import (
	"context"
	"testing"
	"time"
)

// Limit is when a wait gives up: 5% of the time left before the test
// binary's deadline, so the failure is still reported as one (false: the
// binary has no deadline, wait forever).
func Limit(t *testing.T) (time.Time, bool) {
	end, ok := t.Deadline()
	return end.Add(-time.Until(end) / 20), ok
}

// Until polls cond until it holds; cond also describes the state it saw.
// At Limit it fails t with that description.
func Until(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	limit, bounded := Limit(t)
	for {
		done, state := cond()
		if done {
			return
		}
		if bounded && time.Now().After(limit) {
			t.Fatalf("%s: still not so at the test's deadline:\n%s", what, state)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// After fires at Limit (never if the binary has no deadline).
func After(t *testing.T) <-chan time.Time {
	limit, bounded := Limit(t)
	if !bounded {
		return nil
	}
	return time.After(time.Until(limit))
}

// Context is t's context, ended at Limit: a socket operation that never
// completes fails the test instead of hanging it.
func Context(t *testing.T) (context.Context, context.CancelFunc) {
	limit, bounded := Limit(t)
	if !bounded {
		return context.WithCancel(t.Context())
	}
	return context.WithDeadline(t.Context(), limit)
}
