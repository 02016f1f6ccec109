package deploy

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

// The DynamoGraphDeployment shape (nvidia.com/v1alpha1), field names as in
// ai-dynamo/dynamo examples/backends/*/deploy/*.yaml.
type (
	// Graph is a DynamoGraphDeployment.
	Graph struct {
		APIVersion string   `yaml:"apiVersion"`
		Kind       string   `yaml:"kind"`
		Metadata   Metadata `yaml:"metadata"`
		Spec       Spec     `yaml:"spec"`
	}
	// Metadata names the deployment.
	Metadata struct {
		Name string `yaml:"name"`
	}
	// Spec holds the services by name.
	Spec struct {
		Services map[string]Service `yaml:"services"`
	}
	// Service is one component: the frontend or one worker kind.
	Service struct {
		EnvFromSecret    string       `yaml:"envFromSecret,omitempty"`
		ComponentType    string       `yaml:"componentType"`              // frontend | worker
		SubComponentType string       `yaml:"subComponentType,omitempty"` // prefill | decode
		Replicas         int          `yaml:"replicas"`
		Envs             []Env        `yaml:"envs,omitempty"`
		Resources        *Resources   `yaml:"resources,omitempty"`
		ExtraPodSpec     ExtraPodSpec `yaml:"extraPodSpec"`
	}
	// Env is one environment variable.
	Env struct {
		Name  string `yaml:"name"`
		Value string `yaml:"value"`
	}
	// Resources are the per-pod limits.
	Resources struct {
		Limits Limits `yaml:"limits"`
	}
	// Limits: gpu is a string, as upstream writes it ("1").
	Limits struct {
		GPU string `yaml:"gpu"`
	}
	// ExtraPodSpec carries the main container.
	ExtraPodSpec struct {
		MainContainer Container `yaml:"mainContainer"`
	}
	// Container is the main container's image, command and arguments.
	Container struct {
		Image   string   `yaml:"image"`
		Command []string `yaml:"command,omitempty"`
		Args    []string `yaml:"args,omitempty"`
	}
)

var nameChars = regexp.MustCompile(`[^a-z0-9-]+`)

// serviceName is the worker service's name, as upstream's examples name
// them (VllmDecodeWorker, VllmPrefillWorker; TRTLLMWorker).
func (p *plan) serviceName(role string) string {
	prefix := map[string]string{"vllm": "Vllm", "sglang": "SGLang", "trtllm": "TRTLLM"}[p.backend]
	switch role {
	case "prefill":
		return prefix + "PrefillWorker"
	case "decode":
		return prefix + "DecodeWorker"
	}
	return prefix + "Worker"
}

// dgd renders dgd.yaml.
func (p *plan) dgd() ([]byte, error) {
	e := &p.cfg.Engine
	mode := "agg"
	if e.Mode == "disaggregated" {
		mode = "disagg"
	}
	name := nameChars.ReplaceAllString(strings.ToLower(fmt.Sprintf("dynosim-%s-%s-%s", e.Backend, mode, e.Model)), "-")
	name = strings.Trim(name, "-")
	if len(name) > 63 { // a Kubernetes name
		name = strings.TrimRight(name[:63], "-")
	}
	_, fenv := p.frontendArgs()
	front := Service{ComponentType: "frontend", Replicas: 1, ExtraPodSpec: ExtraPodSpec{MainContainer: Container{Image: ImagePlaceholder}}}
	for _, kv := range fenv {
		front.Envs = append(front.Envs, Env{Name: kv[0], Value: kv[1]})
	}
	g := Graph{APIVersion: "nvidia.com/v1alpha1", Kind: "DynamoGraphDeployment", Metadata: Metadata{Name: name},
		Spec: Spec{Services: map[string]Service{"Frontend": front}}}
	for _, w := range p.workers {
		s := Service{
			EnvFromSecret: HFSecret, ComponentType: "worker", Replicas: w.r.Parallelism.Replicas,
			Resources: &Resources{Limits: Limits{GPU: itoa(w.gpus)}},
			ExtraPodSpec: ExtraPodSpec{MainContainer: Container{
				Image:   ImagePlaceholder,
				Command: []string{"python3", "-m", "dynamo." + p.backend},
				Args:    append([]string{p.modelFlag(), p.model}, p.dynamoArgs(w)...),
			}},
		}
		if w.role != "aggregated" {
			s.SubComponentType = w.role
		}
		g.Spec.Services[p.serviceName(w.role)] = s
	}
	var b bytes.Buffer
	for _, h := range p.header() {
		b.WriteString("# " + h + "\n")
	}
	b.WriteString("# Image: every " + ImagePlaceholder + " is yours to complete (e.g. nvcr.io/nvidia/ai-dynamo/" +
		map[string]string{"vllm": "vllm", "sglang": "sglang", "trtllm": "tensorrtllm"}[p.backend] + "-runtime:<version>).\n")
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&g); err != nil {
		return nil, fmt.Errorf("deploy: dgd.yaml: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("deploy: dgd.yaml: %w", err)
	}
	return b.Bytes(), nil
}
