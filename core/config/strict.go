package config

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// The strict half of Parse: the YAML tree is checked against the Config
// type before it is decoded, so that an unknown key or a value of the
// wrong kind is an error naming its path and line, where yaml.v3 would
// ignore the key or word the error in Go types.

// check walks the YAML tree against the config type: every key must name a
// field; scalars must fit their field's kind.
func check(name string, n *yaml.Node, t reflect.Type, path string) error {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	where := func() string {
		if n.Line > 0 {
			return fmt.Sprintf("%s:%d: %s", name, n.Line, path)
		}
		return "--set " + path // only --set values have no line
	}
	if t == reflect.TypeOf(Tokens{}) {
		return checkTokens(name, n, path)
	}
	switch t.Kind() {
	case reflect.Pointer: // an optional value: null or the element
		if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
			return nil
		}
		return check(name, n, t.Elem(), path)
	case reflect.Struct:
		if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
			return nil
		}
		if n.Kind != yaml.MappingNode {
			if path == "" {
				return fmt.Errorf("%s: the config must be a YAML mapping", name)
			}
			return fmt.Errorf("%s: must be a mapping", where())
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := k.Value
			if path != "" {
				p = path + "." + k.Value
			}
			f, ok := fieldByTag(t, k.Value)
			if !ok && path == "" && (k.Value == "optimization" || k.Value == "optimizer") {
				return fmt.Errorf("%s:%d: %s: belongs to a `dynosim recommend` config; predict takes one configuration", name, k.Line, p)
			}
			if !ok {
				if k.Line == 0 {
					return fmt.Errorf("--set %s: unknown key", p)
				}
				return fmt.Errorf("%s:%d: %s: unknown key", name, k.Line, p)
			}
			if err := check(name, v, f.Type, p); err != nil {
				return err
			}
		}
	case reflect.Slice:
		if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
			return nil
		}
		if n.Kind != yaml.SequenceNode {
			return fmt.Errorf("%s: must be a list", where())
		}
		for i, c := range n.Content {
			if err := check(name, c, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	default:
		if IsDomain(n) {
			return fmt.Errorf("%s: a search domain ({choices} or {range}) is for `dynosim recommend`; predict needs one value", where())
		}
		if n.Kind != yaml.ScalarNode {
			return fmt.Errorf("%s: must be a %s value", where(), kindName(t.Kind()))
		}
		if err := scalarFits(n, t.Kind()); err != nil {
			return fmt.Errorf("%s: %v", where(), err)
		}
	}
	return nil
}

// IsDomain reports whether n is a recommend search domain: a mapping of
// exactly one key, choices or range.
func IsDomain(n *yaml.Node) bool {
	return n.Kind == yaml.MappingNode && len(n.Content) == 2 && (n.Content[0].Value == "choices" || n.Content[0].Value == "range")
}

func fieldByTag(t reflect.Type, key string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		if tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); tag == key {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

func kindName(k reflect.Kind) string {
	switch k {
	case reflect.Bool:
		return "boolean"
	case reflect.String:
		return "string"
	case reflect.Float64:
		return "number"
	}
	return "integer"
}

func scalarFits(n *yaml.Node, k reflect.Kind) error {
	v := n.Value
	switch k {
	case reflect.Bool:
		if n.Tag != "!!bool" {
			return fmt.Errorf("must be true or false, got %q", v)
		}
	case reflect.Int, reflect.Int64:
		if n.Tag != "!!int" {
			return fmt.Errorf("must be an integer, got %q", v)
		}
	case reflect.Uint64:
		if _, err := strconv.ParseUint(v, 0, 64); err != nil || n.Tag != "!!int" {
			return fmt.Errorf("must be an integer ≥ 0, got %q", v)
		}
	case reflect.Float64:
		if n.Tag != "!!int" && n.Tag != "!!float" {
			return fmt.Errorf("must be a number, got %q", v)
		}
		if f, err := strconv.ParseFloat(v, 64); err != nil || f != f || f > 1e300 || f < -1e300 {
			return fmt.Errorf("must be a finite number, got %q", v)
		}
	case reflect.String:
		if n.Tag != "!!str" && n.Tag != "!!int" && n.Tag != "!!float" && n.Tag != "!!bool" {
			return fmt.Errorf("must be a string, got %q", v)
		}
		n.Tag = "!!str"
	}
	return nil
}
