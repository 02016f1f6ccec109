package main

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// yamlEdit changes values of a YAML document the way a person would: a
// value that is already written is replaced where it stands (the rest of
// the text, its comments and layout untouched); only when a key must be
// added, removed or a mapping replaced is the document re-encoded from
// its yaml.v3 node tree, which keeps every other key and the comments.
type yamlEdit struct {
	text    string
	doc     yaml.Node
	root    *yaml.Node
	splices []splice
	want    map[string]*yaml.Node // path → the value set (nil: deleted), checked after splicing
	order   []string
	reshape bool // a key added, deleted or a non-scalar replaced
}

// splice replaces the plain scalar old at (line, col) (1-based, in runes).
type splice struct {
	line, col int
	old, new  string
}

func newYAMLEdit(text string) (*yamlEdit, error) {
	e := &yamlEdit{text: text, want: map[string]*yaml.Node{}}
	if err := yaml.Unmarshal([]byte(text), &e.doc); err != nil {
		return nil, fmt.Errorf("the YAML does not parse (%s): fix it in the editor first", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if e.doc.Kind == 0 || len(e.doc.Content) == 0 {
		e.doc = yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.MappingNode, Tag: "!!map"}}}
		e.reshape = true
	}
	e.root = e.doc.Content[0]
	if e.root.Kind == yaml.ScalarNode && e.root.Tag == "!!null" {
		*e.root = yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		e.reshape = true
	}
	if e.root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("the config must be a YAML mapping: fix it in the editor first")
	}
	return e, nil
}

// child is the key and value nodes of key in mapping n (the last, as
// yaml.v3 decodes a repeated key), nil if absent.
func child(n *yaml.Node, key string) (k, v *yaml.Node) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			k, v = n.Content[i], n.Content[i+1]
		}
	}
	return k, v
}

// lookup is the value at the dotted path, nil if absent (aliases followed).
func lookup(n *yaml.Node, path string) *yaml.Node {
	for _, key := range strings.Split(path, ".") {
		if n != nil && n.Kind == yaml.AliasNode {
			n = n.Alias
		}
		if n == nil || n.Kind != yaml.MappingNode {
			return nil
		}
		_, n = child(n, key)
	}
	if n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// parent walks to the mapping that holds the last key of path, creating
// missing mappings (and turning a null into one) when create is set.
func (e *yamlEdit) parent(path string, create bool) (*yaml.Node, string, error) {
	keys := strings.Split(path, ".")
	n := e.root
	for i, key := range keys[:len(keys)-1] {
		_, v := child(n, key)
		switch {
		case v == nil && !create:
			return nil, "", nil
		case v == nil:
			v = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
			n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, v)
			e.reshape = true
		case v.Kind == yaml.AliasNode:
			return nil, "", fmt.Errorf("%s is an alias (*%s): edit it in the editor", strings.Join(keys[:i+1], "."), v.Value)
		case v.Kind == yaml.ScalarNode && v.Tag == "!!null" && create:
			*v = yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Style: v.Style}
			e.reshape = true
		case v.Kind != yaml.MappingNode:
			return nil, "", fmt.Errorf("%s is not a mapping: fix it in the editor", strings.Join(keys[:i+1], "."))
		}
		n = v
	}
	return n, keys[len(keys)-1], nil
}

// scalar is a YAML scalar node of the given text and tag.
func scalar(tag, value string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: value}
}

// set makes the value at path v (a scalar node).
func (e *yamlEdit) set(path string, v *yaml.Node) error {
	n, key, err := e.parent(path, true)
	if err != nil {
		return err
	}
	e.note(path, v)
	k, old := child(n, key)
	switch {
	case old == nil:
		n.Content = append(n.Content, scalar("!!str", key), v)
		e.reshape = true
	case old.Kind == yaml.ScalarNode && old.Style == 0 && old.Tag != "!!null" && old.Value != "" && !strings.Contains(old.Value, "\n") && old.Line > 0:
		e.splices = append(e.splices, splice{old.Line, old.Column, old.Value, v.Value})
		old.Value, old.Tag = v.Value, v.Tag
	default: // a mapping, an alias, a quoted or empty value: replace the node
		for i := 1; i < len(n.Content); i += 2 {
			if n.Content[i-1] == k {
				v.LineComment = old.LineComment
				n.Content[i] = v
			}
		}
		e.reshape = true
	}
	return nil
}

// del removes the key at path, if present.
func (e *yamlEdit) del(path string) error {
	n, key, err := e.parent(path, false)
	if err != nil || n == nil {
		return err
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			e.note(path, nil)
			n.Content = slices.Delete(n.Content, i, i+2)
			e.reshape = true
			i -= 2
		}
	}
	return nil
}

func (e *yamlEdit) note(path string, v *yaml.Node) {
	if _, ok := e.want[path]; !ok {
		e.order = append(e.order, path)
	}
	e.want[path] = v
}

// result is the edited text: the original with its values replaced in
// place when that reads back as the edit, else the re-encoded document.
func (e *yamlEdit) result() (string, error) {
	if !e.reshape {
		if out, ok := e.spliced(); ok {
			return out, nil
		}
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&e.doc); err != nil {
		return "", err
	}
	if err := enc.Close(); err != nil {
		return "", err
	}
	return b.String(), nil
}

// spliced applies the splices to the text and checks that the result
// parses and holds every value set (a value that would need quoting where
// it stands, say, does not).
func (e *yamlEdit) spliced() (string, bool) {
	lines := strings.SplitAfter(e.text, "\n")
	sp := slices.Clone(e.splices)
	slices.SortFunc(sp, func(a, b splice) int { // right to left, so columns stay valid
		if a.line != b.line {
			return b.line - a.line
		}
		return b.col - a.col
	})
	for _, s := range sp {
		if s.line > len(lines) {
			return "", false
		}
		r := []rune(lines[s.line-1])
		old := []rune(s.old)
		if s.col < 1 || s.col-1+len(old) > len(r) || string(r[s.col-1:s.col-1+len(old)]) != s.old {
			return "", false
		}
		lines[s.line-1] = string(r[:s.col-1]) + s.new + string(r[s.col-1+len(old):])
	}
	out := strings.Join(lines, "")
	var doc yaml.Node
	if yaml.Unmarshal([]byte(out), &doc) != nil || len(doc.Content) == 0 {
		return "", false
	}
	for _, path := range e.order {
		v, got := e.want[path], lookup(doc.Content[0], path)
		if v == nil {
			if got != nil {
				return "", false
			}
			continue
		}
		if got == nil || got.Kind != yaml.ScalarNode || got.Value != v.Value || got.ShortTag() != v.ShortTag() {
			return "", false
		}
	}
	return out, true
}
