// Package promtest runs a real Prometheus server for tests, so that what
// dynosim exports is checked by the scraper and query engine that will
// consume it rather than by a parser of our own.
//
// Start uses the prometheus binary from $PROMETHEUS or $PATH (Debian's
// package installs /usr/bin/prometheus). Without one the test is skipped,
// unless DYNOSIM_REQUIRE_PROMETHEUS=1 (set it in CI, where a skip would hide
// a regression), in which case it fails.
package promtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Environment variables read by Start.
const (
	// EnvBinary names the prometheus binary to run instead of the one on $PATH.
	EnvBinary = "PROMETHEUS"
	// EnvRequire, set to 1, turns a missing binary into a test failure.
	EnvRequire = "DYNOSIM_REQUIRE_PROMETHEUS"
)

// Timeouts of the server's lifecycle.
const (
	readyTimeout = 30 * time.Second // start to /-/ready
	stopTimeout  = 5 * time.Second  // SIGTERM to SIGKILL
	startTries   = 3                // attempts if the chosen port is taken meanwhile
)

// Server is a running Prometheus.
type Server struct {
	url     string
	targets int // how many targets it was configured to scrape
	client  *http.Client
	cmd     *exec.Cmd
	exited  chan struct{} // closed when cmd has been waited for
	log     *syncBuffer
}

// Sample is one element of an instant vector: the series' labels (including
// __name__) and its value.
type Sample struct {
	Metric map[string]string
	Value  float64
}

// Start runs Prometheus on a free 127.0.0.1 port, scraping targets
// (host:port, path /metrics) every scrapeInterval (500ms if ≤ 0; Prometheus
// durations have millisecond resolution), with its storage in a temporary
// directory. It returns once /-/ready answers, and stops the server when the
// test ends: SIGTERM, then SIGKILL after 5 s.
//
// Prometheus 2.x hands new targets to its scrape manager on a 5 s tick, so
// the first scrape happens about 5 s after Start returns, whatever the
// interval. Call WaitTargets, or give WaitFor a timeout well above that.
func Start(t testing.TB, targets []string, scrapeInterval time.Duration) *Server {
	t.Helper()
	bin, err := binary()
	if err != nil {
		if os.Getenv(EnvRequire) == "1" {
			t.Fatalf("promtest: %v (required by %s=1)", err, EnvRequire)
		}
		t.Skipf("promtest: %v; set %s or install prometheus", err, EnvBinary)
	}
	if scrapeInterval <= 0 {
		scrapeInterval = 500 * time.Millisecond
	}
	dir := t.TempDir()
	config := filepath.Join(dir, "prometheus.yml")
	if err := writeConfig(config, targets, scrapeInterval); err != nil {
		t.Fatalf("promtest: %v", err)
	}
	var lastErr error
	for try := range startTries {
		// A fresh directory per try, in case a failed server left a lock.
		s, err := start(bin, config, filepath.Join(dir, "data"+strconv.Itoa(try)))
		if err == nil {
			t.Cleanup(func() {
				if err := s.stop(); err != nil {
					t.Errorf("promtest: %v", err)
				}
				if t.Failed() {
					t.Logf("prometheus log:\n%s", s.log.String())
				}
			})
			s.targets = len(targets)
			return s
		}
		lastErr = err
		// Only a port lost to a concurrent listener is worth another try.
		if !strings.Contains(err.Error(), "address already in use") {
			break
		}
	}
	t.Fatalf("promtest: %v", lastErr)
	return nil
}

// binary finds the prometheus executable.
func binary() (string, error) {
	if p := os.Getenv(EnvBinary); p != "" {
		path, err := exec.LookPath(p)
		if err != nil {
			return "", fmt.Errorf("%s=%q: %w", EnvBinary, p, err)
		}
		return path, nil
	}
	path, err := exec.LookPath("prometheus")
	if err != nil {
		return "", fmt.Errorf("no prometheus binary: %w", err)
	}
	return path, nil
}

// writeConfig writes a Prometheus configuration scraping targets. It is
// JSON, which is YAML, so no YAML library or quoting rules are involved.
func writeConfig(path string, targets []string, interval time.Duration) error {
	// Prometheus rejects fractional durations such as "1.5s", so use ms.
	d := strconv.FormatInt(max(interval.Milliseconds(), 1), 10) + "ms"
	if targets == nil {
		targets = []string{}
	}
	cfg := map[string]any{
		"global": map[string]any{
			"scrape_interval":     d,
			"scrape_timeout":      d, // must not exceed the interval
			"evaluation_interval": d,
		},
		"scrape_configs": []any{map[string]any{
			"job_name":       "dynosim",
			"metrics_path":   "/metrics",
			"static_configs": []any{map[string]any{"targets": targets}},
		}},
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return fmt.Errorf("encode config: %w", err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	return nil
}

// start launches one Prometheus process and waits until it is ready.
func start(bin, config, data string) (*Server, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	log := &syncBuffer{}
	cmd := exec.Command(bin,
		"--config.file="+config,
		"--storage.tsdb.path="+data,
		"--web.listen-address="+addr,
		"--log.level=warn",
	)
	cmd.Stdout, cmd.Stderr = log, log
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	s := &Server{
		url:    "http://" + addr,
		client: &http.Client{Timeout: 10 * time.Second},
		cmd:    cmd,
		exited: make(chan struct{}),
		log:    log,
	}
	go func() {
		_ = cmd.Wait() // the exit status is reported through s.exited and the log
		close(s.exited)
	}()
	if err := s.waitReady(); err != nil {
		_ = s.stop()
		return nil, fmt.Errorf("%w\nprometheus log:\n%s", err, log.String())
	}
	return s, nil
}

// freeAddr returns a 127.0.0.1 address with a port the kernel just handed
// out. Prometheus binds it a moment later; Start retries if another process
// got there first.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		return "", fmt.Errorf("release port %s: %w", addr, err)
	}
	return addr, nil
}

func (s *Server) waitReady() error {
	deadline := time.Now().Add(readyTimeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		resp, err := s.client.Get(s.url + "/-/ready")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-s.exited:
			return fmt.Errorf("prometheus exited before it was ready (%v)", s.cmd.ProcessState)
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("prometheus not ready after %v", readyTimeout)
		}
	}
}

// stop terminates the process: SIGTERM, then SIGKILL after stopTimeout.
func (s *Server) stop() error {
	select {
	case <-s.exited:
		return nil
	default:
	}
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("stop prometheus: %w", err)
	}
	select {
	case <-s.exited:
		return nil
	case <-time.After(stopTimeout):
	}
	if err := s.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("kill prometheus: %w", err)
	}
	<-s.exited
	return fmt.Errorf("prometheus ignored SIGTERM for %v and was killed", stopTimeout)
}

// URL returns the server's base URL, e.g. http://127.0.0.1:40123.
func (s *Server) URL() string { return s.url }

// Log returns what the server has written to stdout and stderr so far.
func (s *Server) Log() string { return s.log.String() }

// Query runs an instant PromQL query at the current time and returns its
// samples. A scalar result is returned as one sample without labels; other
// result types are an error.
func (s *Server) Query(ctx context.Context, q string) ([]Sample, error) {
	var data struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	}
	if err := s.get(ctx, "/api/v1/query", url.Values{"query": {q}}, &data); err != nil {
		return nil, fmt.Errorf("query %q: %w", q, err)
	}
	switch data.ResultType {
	case "vector":
		var vec []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		}
		if err := json.Unmarshal(data.Result, &vec); err != nil {
			return nil, fmt.Errorf("query %q: decode vector: %w", q, err)
		}
		out := make([]Sample, 0, len(vec))
		for _, e := range vec {
			v, err := sampleValue(e.Value)
			if err != nil {
				return nil, fmt.Errorf("query %q: %w", q, err)
			}
			out = append(out, Sample{Metric: e.Metric, Value: v})
		}
		return out, nil
	case "scalar":
		var sc [2]any
		if err := json.Unmarshal(data.Result, &sc); err != nil {
			return nil, fmt.Errorf("query %q: decode scalar: %w", q, err)
		}
		v, err := sampleValue(sc)
		if err != nil {
			return nil, fmt.Errorf("query %q: %w", q, err)
		}
		return []Sample{{Metric: map[string]string{}, Value: v}}, nil
	}
	return nil, fmt.Errorf("query %q: result type %q, want vector or scalar", q, data.ResultType)
}

// sampleValue decodes the API's [timestamp, "value"] pair; the value is a
// string because JSON has no NaN or Inf.
func sampleValue(p [2]any) (float64, error) {
	str, ok := p[1].(string)
	if !ok {
		return 0, fmt.Errorf("sample value %v is not a string", p[1])
	}
	v, err := strconv.ParseFloat(str, 64)
	if err != nil {
		return 0, fmt.Errorf("sample value: %w", err)
	}
	return v, nil
}

// WaitFor polls Query until cond holds for its samples or timeout passes.
// It returns the last samples, and on timeout an error that includes the
// last query error, if any.
func (s *Server) WaitFor(ctx context.Context, q string, timeout time.Duration, cond func([]Sample) bool) ([]Sample, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var (
		last    []Sample
		lastErr error
	)
	for {
		samples, err := s.Query(ctx, q)
		if err == nil {
			last, lastErr = samples, nil
			if cond(samples) {
				return samples, nil
			}
		} else if ctx.Err() == nil {
			lastErr = err
		}
		select {
		case <-ctx.Done():
			if lastErr != nil {
				return last, fmt.Errorf("wait for %q: %w (last error: %v)", q, ctx.Err(), lastErr)
			}
			return last, fmt.Errorf("wait for %q: %w (last result: %v)", q, ctx.Err(), last)
		case <-tick.C:
		}
	}
}

// WaitTargets waits until every configured target has been scraped
// successfully. If timeout passes first, the error carries each unhealthy
// target's last scrape error, which says why Prometheus rejected it (e.g. an
// exposition it cannot parse) where WaitFor would only time out.
func (s *Server) WaitTargets(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	status := "no answer"
	for {
		var data struct {
			ActiveTargets []struct {
				ScrapeURL string `json:"scrapeUrl"`
				Health    string `json:"health"`
				LastError string `json:"lastError"`
			} `json:"activeTargets"`
		}
		err := s.get(ctx, "/api/v1/targets", url.Values{"state": {"active"}}, &data)
		switch {
		case err != nil:
			if ctx.Err() == nil {
				status = err.Error()
			}
		default:
			up := 0
			var bad []string
			for _, tg := range data.ActiveTargets {
				if tg.Health == "up" {
					up++
				} else {
					bad = append(bad, fmt.Sprintf("%s %s: %q", tg.ScrapeURL, tg.Health, tg.LastError))
				}
			}
			if up == s.targets && len(data.ActiveTargets) == s.targets {
				return nil
			}
			status = fmt.Sprintf("%d of %d targets up", up, s.targets)
			if len(bad) > 0 {
				status += "; " + strings.Join(bad, "; ")
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for targets: %w (%s)", ctx.Err(), status)
		case <-tick.C:
		}
	}
}

// MetricNames returns the names of every metric the server has ingested
// (the values of the __name__ label).
func (s *Server) MetricNames(ctx context.Context) ([]string, error) {
	var names []string
	if err := s.get(ctx, "/api/v1/label/__name__/values", nil, &names); err != nil {
		return nil, fmt.Errorf("metric names: %w", err)
	}
	return names, nil
}

// get calls a Prometheus HTTP API endpoint and decodes the data field of
// its response envelope into out.
func (s *Server) get(ctx context.Context, path string, params url.Values, out any) error {
	u := s.url + path
	if len(params) > 0 {
		u += "?" + params.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("build request: %w", err)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("GET %s: read body: %w", path, err)
	}
	var env struct {
		Status    string          `json:"status"`
		Data      json.RawMessage `json:"data"`
		ErrorType string          `json:"errorType"`
		Error     string          `json:"error"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return fmt.Errorf("GET %s: %s: decode response: %w", path, resp.Status, err)
	}
	if env.Status != "success" {
		return fmt.Errorf("GET %s: %s: %s: %s", path, resp.Status, env.ErrorType, env.Error)
	}
	if err := json.Unmarshal(env.Data, out); err != nil {
		return fmt.Errorf("GET %s: decode data: %w", path, err)
	}
	return nil
}

// syncBuffer is a bytes.Buffer safe for the process's writers and readers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
