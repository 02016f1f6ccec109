package metrics_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dynosim/dynosim-web/cmd/dynosim/live/metrics"
)

// TestHandler checks the HTTP exposition as Prometheus 2.x negotiates it:
// names with colons must come out verbatim, not escaped.
func TestHandler(t *testing.T) {
	m := metrics.New("vllm", "m", testCache)
	script(m)
	extra := prometheus.NewCounter(prometheus.CounterOpts{Name: "dynosim_kv_events_total", Help: "Test collector."})
	extra.Add(7)
	m.MustRegister(extra)
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()

	req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("Content-Type %q, want text/plain; version=0.0.4", ct)
	}
	for _, want := range []string{
		"# TYPE vllm:time_to_first_token_seconds histogram\n",
		`vllm:num_requests_running{dp_rank="0",engine="0",model_name="m",worker="0"} 3` + "\n",
		`vllm:time_to_first_token_seconds_bucket{dp_rank="0",engine="0",model_name="m",worker="0",le="0.5"} 1` + "\n",
		"dynosim_kv_events_total 7\n",
		"go_goroutines ",
		"process_cpu_seconds_total ",
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("exposition lacks %q", want)
		}
	}
	// A second call must not re-register the handler's own metrics.
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "promhttp_metric_handler_requests_total") {
		t.Errorf("second Handler: status %d, body without promhttp_metric_handler_requests_total", rec.Code)
	}
}
