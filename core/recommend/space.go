// Package recommend searches serving configurations (`dynosim recommend`,
// spec mocker.md §9.2 and upstream-2026.md §1.5): a predict config in which
// any value may be a domain ({choices: [...]} or {range: {...}}), plus
// optimization and optimizer sections. It enumerates or samples candidates,
// runs each through an Evaluator (the local simulator, or the Worker over
// HTTP), scores them against the target and records every one, feasible or
// not, in a ledger. It owns no goroutines' order: results are placed by
// candidate, so a seed gives the same ledger whatever the parallelism.
package recommend

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/dynosim/dynosim-web/core/config"
	"gopkg.in/yaml.v3"
)

// Dim is one searched value: its config path and its choices, each as the
// YAML text a --set takes.
type Dim struct {
	Path   string
	Values []string
}

// Space is a parsed recommend config.
type Space struct {
	Name string // the config's name, for errors
	// Base is the config with every domain at its first value and without
	// optimization and optimizer; a candidate is Base plus one --set per
	// dimension.
	Base []byte
	Dims []Dim
	Spec Spec
	// Deployments, when the space is the default one (default_space.go),
	// are the overrides of each value of its one dimension, in place of
	// Path=value.
	Deployments [][]string
}

// Size is the number of candidates (the product of the dimensions' sizes;
// math.MaxInt when it would overflow).
func (s *Space) Size() int {
	n := 1
	for _, d := range s.Dims {
		if n > math.MaxInt/len(d.Values) {
			return math.MaxInt
		}
		n *= len(d.Values)
	}
	return n
}

// Candidate is one point of the space: a choice index per dimension.
type Candidate []int

// At returns candidate number i of the space in mixed radix (the last
// dimension varies fastest).
func (s *Space) At(i int) Candidate {
	c := make(Candidate, len(s.Dims))
	for d := len(s.Dims) - 1; d >= 0; d-- {
		n := len(s.Dims[d].Values)
		c[d] = i % n
		i /= n
	}
	return c
}

// Index is c's number in the space (the inverse of At).
func (s *Space) Index(c Candidate) int {
	i := 0
	for d, v := range c {
		i = i*len(s.Dims[d].Values) + v
	}
	return i
}

// Sets are c's overrides of Base.
func (s *Space) Sets(c Candidate) []string {
	out := make([]string, 0, len(s.Dims))
	for d, v := range c {
		if s.Deployments != nil && s.Dims[d].Path == DefaultPath {
			out = append(out, s.Deployments[v]...)
			continue
		}
		out = append(out, s.Dims[d].Path+"="+s.Dims[d].Values[v])
	}
	return out
}

// YAML is a complete predict config: Base with sets applied (a
// candidate's, see Entry.Sets).
func (s *Space) YAML(sets []string) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(s.Base, &doc); err != nil {
		return nil, err
	}
	root := &doc
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		root = doc.Content[0]
	}
	if root.Kind != yaml.MappingNode {
		root = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	}
	for _, set := range sets {
		if err := config.ApplySet(root, set); err != nil {
			return nil, err
		}
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(root); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// MaxChoices bounds one dimension (a range of a million steps is a typo).
const MaxChoices = 4096

// Parse reads a recommend config: sets (PATH=VALUE, where VALUE may be a
// domain) apply first, then domains become dimensions in document order.
func Parse(name string, data []byte, sets []string) (*Space, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, config.SyntaxError(name, data, err)
	}
	root := &doc
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		root = doc.Content[0]
	}
	if root.Kind == 0 || root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		root = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	}
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s: the config must be a YAML mapping", name)
	}
	for _, s := range sets {
		if err := config.ApplySet(root, s); err != nil {
			return nil, err
		}
	}
	sp := &Space{Name: name, Spec: DefaultSpec()}
	// The search's own sections.
	for i := 0; i+1 < len(root.Content); {
		k, v := root.Content[i], root.Content[i+1]
		if k.Value != "optimization" && k.Value != "optimizer" {
			i += 2
			continue
		}
		if err := sp.Spec.decode(name, k.Value, v); err != nil {
			return nil, err
		}
		root.Content = slices.Delete(root.Content, i, i+2)
	}
	if err := sp.walk(name, root, ""); err != nil {
		return nil, err
	}
	base, err := yaml.Marshal(root)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	sp.Base = base
	if err := sp.Spec.validate(name); err != nil {
		return sp, err
	}
	sp.defaultSpace()
	return sp, nil
}

// walk replaces every domain below n by its first value, recording it.
func (sp *Space) walk(name string, n *yaml.Node, path string) error {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		p := k.Value
		if path != "" {
			p = path + "." + k.Value
		}
		if !config.IsDomain(v) {
			if err := sp.walk(name, v, p); err != nil {
				return err
			}
			continue
		}
		where := fmt.Sprintf("%s:%d: %s", name, k.Line, p)
		if k.Line == 0 {
			where = "--set " + p
		}
		values, err := domainValues(v)
		if err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		d := Dim{Path: p}
		for _, val := range values {
			txt, err := flow(val)
			if err != nil {
				return fmt.Errorf("%s: %w", where, err)
			}
			d.Values = append(d.Values, txt)
		}
		n.Content[i+1] = values[0]
		sp.Dims = append(sp.Dims, d)
	}
	return nil
}

// domainValues materializes a domain: the choices as given, or a range's
// values. A linear range steps from min to max (step 1 unless given); a
// log range doubles from min while ≤ max (and rejects a step). Integer
// bounds give integer values.
func domainValues(v *yaml.Node) ([]*yaml.Node, error) {
	key, body := v.Content[0].Value, v.Content[1]
	if key == "choices" {
		if body.Kind != yaml.SequenceNode || len(body.Content) == 0 {
			return nil, errors.New("choices: must be a non-empty list")
		}
		if len(body.Content) > MaxChoices {
			return nil, fmt.Errorf("choices: at most %d, got %d", MaxChoices, len(body.Content))
		}
		return body.Content, nil
	}
	r, err := parseRange(body)
	if err != nil {
		return nil, err
	}
	lo, err := rangeNumber("min", r.Min)
	if err != nil {
		return nil, err
	}
	hi, err := rangeNumber("max", r.Max)
	if err != nil {
		return nil, err
	}
	integer := r.Min.Tag == "!!int" && r.Max.Tag == "!!int" && (r.Step == nil || r.Step.Tag == "!!int")
	if hi < lo {
		return nil, fmt.Errorf("range: max %v is below min %v", hi, lo)
	}
	if integer {
		// From 2^53 on a float64 no longer holds every integer (2^53 + 1
		// reads as 2^53): the values would be rounded, and int64 of a
		// float past 2^63 is undefined.
		for _, key := range []string{"min", "max", "step"} {
			if n := r.node(key); n != nil {
				if x, _ := strconv.ParseFloat(n.Value, 64); math.Abs(x) >= maxExactInt {
					return nil, fmt.Errorf("range.%s: an integer range needs values within ±(2^53 − 1) (%d), got %s", key, int64(maxExactInt-1), n.Value)
				}
			}
		}
	}
	xs, err := r.values(lo, hi)
	if err != nil {
		return nil, err
	}
	out := make([]*yaml.Node, 0, len(xs))
	for _, x := range xs {
		n := &yaml.Node{Kind: yaml.ScalarNode, Value: strconv.FormatFloat(x, 'g', -1, 64)} // tag resolved from the text
		if integer {
			n.Tag, n.Value = "!!int", strconv.FormatInt(int64(math.Round(x)), 10)
		}
		out = append(out, n)
	}
	return out, nil
}

// maxExactInt is 2^53, from which float64 skips integers.
const maxExactInt = 1 << 53

// valueRange is a range domain as written.
type valueRange struct {
	Min, Max, Step *yaml.Node
	Scale          string
}

// node is the range's min, max or step as written (nil: not given).
func (r *valueRange) node(key string) *yaml.Node {
	switch key {
	case "min":
		return r.Min
	case "max":
		return r.Max
	}
	return r.Step
}

// parseRange reads a range's keys; min and max are required.
func parseRange(body *yaml.Node) (valueRange, error) {
	var r valueRange
	if body.Kind != yaml.MappingNode {
		return r, errors.New("range: must be a mapping {min, max, step, scale}")
	}
	for i := 0; i+1 < len(body.Content); i += 2 {
		switch k, val := body.Content[i].Value, body.Content[i+1]; k {
		case "min":
			r.Min = val
		case "max":
			r.Max = val
		case "step":
			r.Step = val
		case "scale":
			r.Scale = val.Value
		default:
			return r, fmt.Errorf("range.%s: unknown key (want min, max, step, scale)", k)
		}
	}
	if r.Min == nil || r.Max == nil {
		return r, errors.New("range: needs min and max")
	}
	return r, nil
}

// rangeNumber reads a range bound or step, which must be a finite number.
func rangeNumber(what string, n *yaml.Node) (float64, error) {
	f, err := strconv.ParseFloat(n.Value, 64)
	if err != nil || n.Tag != "!!int" && n.Tag != "!!float" || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("range.%s: must be a finite number, got %q", what, n.Value)
	}
	return f, nil
}

// values lists the range's values from lo to hi: linear steps, or
// doublings on a log scale.
//
// Value i is computed from its index (lo + i·step, lo·2^i), never by
// adding step to the previous value: at a magnitude where step is below
// float64's spacing (1e20 + 1 == 1e20) repeated addition never advances,
// and a loop waiting for it to pass max ran until memory ran out. The
// count is fixed before any value is made, so it is at most MaxChoices.
func (r *valueRange) values(lo, hi float64) ([]float64, error) {
	switch r.Scale {
	case "", "linear":
		step := 1.0
		if r.Step != nil {
			var err error
			if step, err = rangeNumber("step", r.Step); err != nil {
				return nil, err
			}
		}
		if !(step > 0) {
			return nil, fmt.Errorf("range.step: must be > 0, got %v", step)
		}
		q := (hi - lo) / step // +Inf when hi − lo overflows: refused below
		if !(q < MaxChoices) {
			return nil, fmt.Errorf("range: more than %d values (min %v to max %v by step %v)", MaxChoices, lo, hi, step)
		}
		// A step that lands on max up to rounding ((0.3 − 0) / 0.1 is
		// 2.9999999999999996) still counts max.
		n := int(math.Floor(q+1e-9)) + 1
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = min(lo+float64(i)*step, hi) // the last may round past max
			if i > 0 && xs[i] <= xs[i-1] {
				return nil, fmt.Errorf("range.step: %v does not advance at magnitude %v (float64 keeps about 16 significant digits): values %d and %d are both %v; use a larger step", step, max(math.Abs(lo), math.Abs(hi)), i, i+1, xs[i])
			}
		}
		return xs, nil
	case "log":
		if r.Step != nil {
			return nil, errors.New("range.step: a log range takes no step (it doubles)")
		}
		if !(lo > 0) {
			return nil, fmt.Errorf("range.min: a log range needs min > 0, got %v", lo)
		}
		var xs []float64
		// lo·2^i is exact (Ldexp only moves the exponent) until it
		// overflows to +Inf, which is past any finite max.
		for i := 0; ; i++ {
			x := math.Ldexp(lo, i)
			if x > hi {
				return xs, nil
			}
			if len(xs) == MaxChoices {
				return nil, fmt.Errorf("range: more than %d values (min %v doubling to max %v)", MaxChoices, lo, hi)
			}
			xs = append(xs, x)
		}
	default:
		return nil, fmt.Errorf("range.scale: must be linear or log, got %q", r.Scale)
	}
}

// flow is n as one-line YAML, the form a --set takes.
func flow(n *yaml.Node) (string, error) {
	c := *n
	setFlow(&c)
	b, err := yaml.Marshal(&c)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

func setFlow(n *yaml.Node) {
	if n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode {
		n.Style = yaml.FlowStyle
		kids := make([]*yaml.Node, len(n.Content))
		for i, k := range n.Content {
			c := *k
			setFlow(&c)
			kids[i] = &c
		}
		n.Content = kids
	}
	n.HeadComment, n.LineComment, n.FootComment = "", "", ""
}
