package deploy

import (
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/core/config"
)

// TestItem33_5DeployBatchWait: a TRT-LLM worker's batch waiting reaches
// both launchers as TensorRT-LLM's LLM API options of the same names, and
// is left out (TRT-LLM's default, off) when 0 / 0.
func TestItem33_5DeployBatchWait(t *testing.T) {
	for _, tc := range []struct {
		name, sched string
		want        []string // substrings of both files
		absent      bool
	}{
		{"InferenceMAX 1k/1k", "{batch_wait_timeout_iters: 20, batch_wait_max_tokens_ratio: 0.9}",
			[]string{`"batch_wait_timeout_iters":20`, `"batch_wait_max_tokens_ratio":0.9`}, false},
		{"off", "{}", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			y := "engine: {backend: trtllm, model: llama-3.1-70b, workers: {aggregated: {parallelism: {tensor: 2}, scheduler: " + tc.sched + "}}}"
			cfg, err := config.Parse("c.yaml", []byte(y), nil)
			if err != nil {
				t.Fatal(err)
			}
			launch, dgd, err := Render(&cfg)
			if err != nil {
				t.Fatal(err)
			}
			for name, f := range map[string]string{"launch.sh": string(launch), "dgd.yaml": string(dgd)} {
				for _, w := range tc.want {
					if !strings.Contains(f, w) && !strings.Contains(f, strings.ReplaceAll(w, `"`, `\"`)) {
						t.Errorf("%s lacks %s", name, w)
					}
				}
				if tc.absent && strings.Contains(f, "batch_wait") {
					t.Errorf("%s sets batch waiting though it is off", name)
				}
			}
		})
	}
}
