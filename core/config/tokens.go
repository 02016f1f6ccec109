package config

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"

	"github.com/dynosim/dynosim-web/core/workload"
	"gopkg.in/yaml.v3"
)

// Tokens is a synthetic length (traffic.source.input_tokens and
// output_tokens): an integer, as before, or a distribution drawn per
// request from the traffic.load.seed stream (issue 32 item 6):
//
//	input_tokens: 1024                       # every request
//	input_tokens: {mean: 1024, stddev: 256}  # normal, truncated to [1, 16 Mi], rounded up (AIPerf)
//	input_tokens: {min: 512, max: 1536}      # uniform integers, both ends included (inference-lab)
//
// The same three shapes are its JSON form.
type Tokens workload.Length

// Length is the workload's view of t.
func (t Tokens) Length() workload.Length { return workload.Length(t) }

// tokensKeys are the keys of a distribution and their value kinds.
var tokensKeys = []struct {
	key  string
	kind reflect.Type
}{{"mean", reflect.TypeOf(0.0)}, {"stddev", reflect.TypeOf(0.0)}, {"min", reflect.TypeOf(0)}, {"max", reflect.TypeOf(0)}}

// shapeError is a distribution's structural mistake: sub is the key it
// names below the length's path ("" for the length itself), line that
// key's line.
type shapeError struct {
	sub  string
	line int
	msg  string
}

// tokensShape checks the keys of a distribution mapping n and returns its
// distribution: mean (and stddev) or min and max, never both, nothing else.
func tokensShape(n *yaml.Node) (string, *shapeError) {
	has := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		known := false
		for _, tk := range tokensKeys {
			known = known || k.Value == tk.key
		}
		if !known {
			return "", &shapeError{k.Value, k.Line, "unknown key (a distribution is {mean, stddev} or {min, max})"}
		}
		has[k.Value] = true
	}
	switch {
	case (has["mean"] || has["stddev"]) && (has["min"] || has["max"]):
		return "", &shapeError{"", n.Line, "give {mean, stddev} (normal) or {min, max} (uniform), not both"}
	case has["stddev"] && !has["mean"]:
		return "", &shapeError{"mean", n.Line, "required with stddev"}
	case has["mean"]:
		return workload.Normal, nil
	case has["min"] && !has["max"]:
		return "", &shapeError{"max", n.Line, "required with min"}
	case has["max"] && !has["min"]:
		return "", &shapeError{"min", n.Line, "required with max"}
	case has["min"]:
		return workload.Uniform, nil
	}
	return "", &shapeError{"", n.Line, "must be an integer, {mean, stddev} or {min, max}"}
}

// checkTokens is check for a Tokens field: a scalar is checked as an
// integer (and a search domain refused, as for any predict value), a
// mapping for its shape, then each value for its kind.
func checkTokens(name string, n *yaml.Node, path string) error {
	if n.Kind != yaml.MappingNode || IsDomain(n) {
		return check(name, n, reflect.TypeOf(0), path)
	}
	if _, e := tokensShape(n); e != nil {
		p := path
		if e.sub != "" {
			p += "." + e.sub
		}
		if e.line == 0 {
			return fmt.Errorf("--set %s: %s", p, e.msg)
		}
		return fmt.Errorf("%s:%d: %s: %s", name, e.line, p, e.msg)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		for _, tk := range tokensKeys {
			if n.Content[i].Value == tk.key {
				if err := check(name, n.Content[i+1], tk.kind, path+"."+tk.key); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// UnmarshalYAML reads an integer or a distribution. Parse has checked the
// tree with its file name and path; for other decoders (JSON) the same
// check runs here.
func (t *Tokens) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if err := checkTokens("tokens", n, "tokens"); err != nil {
		return err
	}
	if n.Kind != yaml.MappingNode {
		var v int
		if err := n.Decode(&v); err != nil {
			return err
		}
		*t = Tokens{N: v}
		return nil
	}
	dist, _ := tokensShape(n)
	var v struct {
		Mean   float64 `yaml:"mean"`
		Stddev float64 `yaml:"stddev"`
		Min    int     `yaml:"min"`
		Max    int     `yaml:"max"`
	}
	if err := n.Decode(&v); err != nil {
		return err
	}
	*t = Tokens{Dist: dist, Mean: v.Mean, Stddev: v.Stddev, Min: v.Min, Max: v.Max}
	return nil
}

// tokensForm is the mapping form of a distribution, keys in this order.
type tokensForm struct {
	Mean   *float64 `yaml:"mean,omitempty" json:"mean,omitempty"`
	Stddev *float64 `yaml:"stddev,omitempty" json:"stddev,omitempty"`
	Min    *int     `yaml:"min,omitempty" json:"min,omitempty"`
	Max    *int     `yaml:"max,omitempty" json:"max,omitempty"`
}

func (t Tokens) form() any {
	switch t.Dist {
	case workload.Normal:
		return tokensForm{Mean: &t.Mean, Stddev: &t.Stddev}
	case workload.Uniform:
		return tokensForm{Min: &t.Min, Max: &t.Max}
	}
	return t.N
}

// MarshalYAML writes the form UnmarshalYAML reads.
func (t Tokens) MarshalYAML() (any, error) { return t.form(), nil }

// MarshalJSON writes an integer or {"mean","stddev"} / {"min","max"}.
func (t Tokens) MarshalJSON() ([]byte, error) { return json.Marshal(t.form()) }

// UnmarshalJSON reads what MarshalJSON writes (JSON is YAML's flow form,
// so one reader serves both).
func (t *Tokens) UnmarshalJSON(b []byte) error {
	var n yaml.Node
	if err := yaml.Unmarshal(b, &n); err != nil {
		return err
	}
	if n.Kind != yaml.DocumentNode || len(n.Content) != 1 {
		return fmt.Errorf("tokens: want an integer or an object, got %s", strconv.Quote(string(b)))
	}
	return t.UnmarshalYAML(n.Content[0])
}

// checkDistributions checks the parameters of the lengths given as
// distributions (validateBounds checks the integers, as before).
func (s *Source) checkDistributions() error {
	if s.InputTokens.Dist != "" {
		if err := s.InputTokens.Length().Check("traffic.source.input_tokens", 1); err != nil {
			return err
		}
	}
	if s.OutputTokens.Dist != "" {
		return s.OutputTokens.Length().Check("traffic.source.output_tokens", 0)
	}
	return nil
}
