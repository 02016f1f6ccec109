package main

import (
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/core/config"
)

func TestRequestTable(t *testing.T) {
	jsonl := `{"uuid":3,"worker":1,"ttft_ms":2.5,"terminal_status":"completed","extra":true}
{"uuid":1,"worker":0,"ttft_ms":10,"terminal_status":"completed","extra":false}
{"uuid":2,"worker":1,"ttft_ms":1.25,"terminal_status":"rejected","extra":true}
`
	tab, err := parseRequests([]byte(jsonl))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(tab.Columns, ","); got != "uuid,worker,ttft_ms,terminal_status,extra" {
		t.Fatalf("columns = %s", got)
	}
	tab.Sort(2) // ttft ascending
	if got := tab.PageRows()[0][0]; got != "2" {
		t.Errorf("first uuid by ttft = %s, want 2", got)
	}
	tab.Sort(2) // descending
	if got := tab.PageRows()[0][0]; got != "1" {
		t.Errorf("first uuid by ttft desc = %s, want 1", got)
	}
	if got := tab.PageRows()[1][2]; got != "2.500" {
		t.Errorf("formatted ttft = %s", got)
	}
	csv := tab.CSV()
	if !strings.HasPrefix(csv, "uuid,worker,ttft_ms,terminal_status,extra\n1,0,10,completed,false\n") {
		t.Errorf("csv = %q", csv)
	}
	if _, err := parseRequests([]byte("{bad\n")); err == nil {
		t.Error("bad JSONL accepted")
	}
}

func TestPaging(t *testing.T) {
	var b strings.Builder
	for i := range 120 {
		b.WriteString(`{"uuid":` + string(rune('0'+i%10)) + "}\n")
	}
	tab, _ := parseRequests([]byte(b.String()))
	if tab.Pages() != 3 {
		t.Fatalf("pages = %d", tab.Pages())
	}
	tab.SetPage(9)
	if tab.Page != 2 || len(tab.PageRows()) != 20 {
		t.Errorf("last page = %d with %d rows", tab.Page, len(tab.PageRows()))
	}
}

func TestShareFragment(t *testing.T) {
	frag := shareFragment("a: 1\n# ü", "synthetic")
	cfg, sample := parseFragment(frag)
	if cfg != "a: 1\n# ü" || sample != "synthetic" {
		t.Errorf("round trip = %q %q (fragment %q)", cfg, sample, frag)
	}
	if cfg, sample := parseFragment("#sample=bogus"); cfg != "" || sample != "" {
		t.Errorf("bogus sample accepted: %q %q", cfg, sample)
	}
}

func TestPresets(t *testing.T) {
	for _, p := range Presets {
		if presetYAML(p.Name) == "" {
			t.Errorf("preset %s empty", p.Name)
		}
	}
	if !strings.Contains(presetYAML("1-worker"), "replicas: 1") {
		t.Error("1-worker preset")
	}
	if d := presetYAML("disaggregated"); !strings.Contains(d, "mode: disaggregated") || !strings.Contains(d, "prefill:") ||
		!strings.Contains(d, "decode:") || strings.Contains(d, "aggregated:") {
		t.Errorf("disaggregated preset:\n%s", d)
	}
	for name, policy := range map[string]string{"planner": "load_180_5", "planner-hybrid": "hybrid_180_5"} {
		if d := presetYAML(name); !strings.Contains(d, "planner: {policy: enabled, scaling_policy: "+policy+"}") || !strings.Contains(d, "sla: {ttft_ms:") {
			t.Errorf("%s preset:\n%s", name, d)
		}
	}
}

func TestPresetsParse(t *testing.T) {
	for _, p := range Presets {
		if _, err := config.Parse(p.Name+".yaml", []byte(p.YAML), nil); err != nil {
			t.Errorf("preset %s: %v", p.Name, err)
		}
	}
}

func TestServiceHost(t *testing.T) {
	for in, want := range map[string]string{
		"https://dynosim.example.workers.dev": "dynosim.example.workers.dev",
		"http://127.0.0.1:8787/api":           "127.0.0.1:8787",
		"":                                    "",
	} {
		if got := serviceHost(in); got != want {
			t.Errorf("serviceHost(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRunLink(t *testing.T) {
	const svc = "https://dynosim.example.workers.dev"
	for loc, want := range map[string]string{
		svc + "/v1/runs/abc":                                        svc + "/v1/runs/abc",
		"HTTPS://dynosim.example.workers.dev/v1/runs":               "https://dynosim.example.workers.dev/v1/runs",
		"javascript:alert(1)":                                       "",
		"JavaScript:alert(1)//https://dynosim.example.workers.dev/": "",
		"data:text/html,<script>alert(1)</script>":                  "",
		"https://evil.example/v1/runs/abc":                          "",
		"http://dynosim.example.workers.dev/v1/runs/abc":            "", // other scheme, other origin
		"https://user@dynosim.example.workers.dev/v1/runs/abc":      "",
		"/v1/runs/abc":                        "", // the page resolves it first
		"":                                    "",
		svc + "/" + strings.Repeat("a", 3000): "",
	} {
		if got := runLink(loc, svc); got != want {
			t.Errorf("runLink(%q) = %q, want %q", loc, got, want)
		}
	}
	if got := runLink(svc+"/v1/runs/abc", ""); got != "" {
		t.Errorf("no service: runLink = %q", got)
	}
}

func TestClip(t *testing.T) {
	if got := clip("short", 10); got != "short" {
		t.Errorf("clip = %q", got)
	}
	got := clip(strings.Repeat("é", 10), 5) // é is 2 bytes: cut inside a rune
	if got != "éé…" {
		t.Errorf("clip = %q", got)
	}
}
