package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/core/deploy"
	"gopkg.in/yaml.v3"
)

// Issue 32 item 3: recommend --output-dir writes deploy/NNNN/launch.sh and
// dgd.yaml beside each recommendations/NNNN.yaml: launch.sh passes bash -n
// and names the recommendation's parallelism; dgd.yaml parses as a
// DynamoGraphDeployment whose GPUs are the recommendation's.
func TestItem32_3RecommendWritesDeployFiles(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	var stdout, stderr bytes.Buffer
	if err := run([]string{"recommend", "-c", recConfig(t, dir, ""), "--output-dir", out, "--quiet"}, &stdout, &stderr); err != nil {
		t.Fatal(err, stderr.String())
	}
	recs, _ := filepath.Glob(filepath.Join(out, "recommendations", "*.yaml"))
	if len(recs) == 0 {
		t.Fatal("no recommendations written")
	}
	for i := range recs {
		d := filepath.Join(out, "deploy", fmt.Sprintf("%04d", i+1))
		launch, err := os.ReadFile(filepath.Join(d, "launch.sh"))
		if err != nil {
			t.Fatalf("%v (stderr: %s)", err, stderr.String())
		}
		if b, err := exec.Command("/bin/bash", "-n", filepath.Join(d, "launch.sh")).CombinedOutput(); err != nil {
			t.Errorf("%s: bash -n: %v %s", d, err, b)
		}
		rec, _ := os.ReadFile(recs[i])
		var c struct {
			Engine struct {
				Workers struct {
					Aggregated struct {
						Parallelism struct{ Replicas, Tensor int }
					}
				}
			}
		}
		if err := yaml.Unmarshal(rec, &c); err != nil {
			t.Fatal(err)
		}
		p := c.Engine.Workers.Aggregated.Parallelism
		if want := fmt.Sprintf("--tensor-parallel-size %d", p.Tensor); !strings.Contains(string(launch), want) {
			t.Errorf("%s: launch.sh does not name %q", d, want)
		}
		raw, err := os.ReadFile(filepath.Join(d, "dgd.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		var g deploy.Graph
		if err := yaml.Unmarshal(raw, &g); err != nil {
			t.Fatalf("%s: dgd.yaml: %v", d, err)
		}
		if g.Kind != "DynamoGraphDeployment" || g.APIVersion == "" || g.Metadata.Name == "" {
			t.Errorf("%s: dgd.yaml head %q %q %q", d, g.APIVersion, g.Kind, g.Metadata.Name)
		}
		gpus := 0
		for _, s := range g.Spec.Services {
			if s.Resources != nil && s.Resources.Limits.GPU != "" {
				var n int
				fmt.Sscan(s.Resources.Limits.GPU, &n)
				gpus += n * s.Replicas
			}
		}
		if gpus != p.Replicas*p.Tensor {
			t.Errorf("%s: dgd.yaml has %d GPUs, the recommendation %d × TP%d", d, gpus, p.Replicas, p.Tensor)
		}
	}
}
