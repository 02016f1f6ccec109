package promtest_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dynosim/dynosim-web/internal/promtest"
)

// TestServer scrapes a fixed exposition and queries it back, next to a
// target whose exposition Prometheus cannot parse.
func TestServer(t *testing.T) {
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "this is { not an exposition\n")
	}))
	defer bad.Close()
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprint(w, "# TYPE demo:up gauge\ndemo:up{rank=\"0\"} 1\ndemo:up{rank=\"1\"} 2\n")
	}))
	defer target.Close()

	t0 := time.Now()
	s := promtest.Start(t, []string{strings.TrimPrefix(target.URL, "http://"), strings.TrimPrefix(bad.URL, "http://")}, 100*time.Millisecond)
	t.Logf("ready after %v at %s", time.Since(t0), s.URL())
	ctx := context.Background()

	// Prometheus 2.x applies targets on a 5 s tick; see Start.
	got, err := s.WaitFor(ctx, "demo:up", 15*time.Second, func(s []promtest.Sample) bool { return len(s) == 2 })
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, smp := range got {
		if smp.Metric["__name__"] != "demo:up" || smp.Metric["job"] != "dynosim" {
			t.Errorf("sample labels %v", smp.Metric)
		}
		sum += smp.Value
	}
	if sum != 3 {
		t.Errorf("values sum to %g, want 3", sum)
	}

	sc, err := s.Query(ctx, "scalar(sum(demo:up))")
	if err != nil || len(sc) != 1 || sc[0].Value != 3 {
		t.Errorf("scalar query = %v, %v; want one sample 3", sc, err)
	}
	if _, err := s.Query(ctx, "demo:up{"); err == nil || !strings.Contains(err.Error(), "bad_data") {
		t.Errorf("malformed query error = %v, want a bad_data error", err)
	}
	if _, err := s.Query(ctx, `"a string"`); err == nil {
		t.Error("string result accepted")
	}

	names, err := s.MetricNames(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !contains(names, "demo:up") || !contains(names, "up") {
		t.Errorf("metric names %v lack demo:up or up", names)
	}

	// Both targets have been scraped by now: the bad one is reported.
	err = s.WaitTargets(ctx, 500*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), bad.URL+"/metrics down") || !strings.Contains(err.Error(), "ParseFloat") {
		t.Errorf("WaitTargets with an unparsable target: %v, want it down with its parse error", err)
	}

	_, err = s.WaitFor(ctx, "demo:up", 300*time.Millisecond, func([]promtest.Sample) bool { return false })
	if err == nil || !strings.Contains(err.Error(), "deadline") {
		t.Errorf("WaitFor on a never-true condition: %v, want a deadline error", err)
	}
	t.Logf("total %v", time.Since(t0))
}

// fakeTB records Skip and Fatal instead of ending the real test.
type fakeTB struct {
	testing.TB
	mu      sync.Mutex
	skipped string
	fatal   string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Skipf(format string, args ...any) {
	f.mu.Lock()
	f.skipped = fmt.Sprintf(format, args...)
	f.mu.Unlock()
	runtime.Goexit()
}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.mu.Lock()
	f.fatal = fmt.Sprintf(format, args...)
	f.mu.Unlock()
	runtime.Goexit()
}

// TestMissingBinary checks skip versus failure when there is no binary.
func TestMissingBinary(t *testing.T) {
	for _, require := range []string{"", "1"} {
		t.Run("require="+require, func(t *testing.T) {
			t.Setenv(promtest.EnvBinary, "/nonexistent/prometheus")
			t.Setenv(promtest.EnvRequire, require)
			f := &fakeTB{TB: t}
			done := make(chan struct{})
			go func() {
				defer close(done)
				promtest.Start(f, nil, 0)
			}()
			<-done
			skipped, fatal := f.skipped != "", f.fatal != ""
			if skipped != (require == "") || fatal != (require == "1") {
				t.Errorf("skipped %q, fatal %q", f.skipped, f.fatal)
			}
		})
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
