package config

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"

	"gopkg.in/yaml.v3"
)

// SyntaxError is syntaxMsg for other readers of config-shaped YAML (a
// recommend config).
func SyntaxError(name string, data []byte, err error) error { return syntaxMsg(name, data, err) }

// syntaxMsg turns a YAML syntax error into "FILE:LINE: message". yaml.v3
// numbers parser errors from the point it gave up, often the line before
// the mistake, and for an unclosed flow collection ("did not find expected
// ',' or '}'") that is far from the bracket left open; the line of the
// innermost bracket still open at the end is the one to fix.
func syntaxMsg(name string, data []byte, err error) error {
	msg := yamlMsg(err)
	m := yamlLineRe.FindStringSubmatch(msg)
	if m == nil {
		return fmt.Errorf("%s: %s", name, msg)
	}
	line, _ := strconv.Atoi(m[1])
	text := m[2]
	if unclosedRe.MatchString(text) {
		if l, br := unclosed(data); l > 0 {
			return fmt.Errorf("%s:%d: %s: the '%c' opened on this line is never closed", name, l, text, br)
		}
	}
	return fmt.Errorf("%s:%d: %s", name, line, text)
}

var (
	yamlLineRe = regexp.MustCompile(`^line (\d+): (.*)$`)
	unclosedRe = regexp.MustCompile(`^did not find expected ',' or '[}\]]'`)
)

// unclosed returns the line (1-based) and the bracket of the innermost
// flow collection still open at the end of data, skipping quoted strings
// and comments; 0 if every bracket is closed.
func unclosed(data []byte) (int, byte) {
	type open struct {
		line int
		br   byte
	}
	var stack []open
	line := 1
	for i := 0; i < len(data); i++ {
		switch c := data[i]; c {
		case '\n':
			line++
		case '#':
			if i == 0 || data[i-1] == ' ' || data[i-1] == '\t' || data[i-1] == '\n' {
				for i < len(data) && data[i] != '\n' {
					i++
				}
				i-- // the newline is counted by the loop
			}
		case '"', '\'':
			for i++; i < len(data) && data[i] != c; i++ {
				if data[i] == '\\' && c == '"' {
					i++
				} else if data[i] == '\n' {
					line++
				}
			}
		case '{', '[':
			stack = append(stack, open{line, c})
		case '}', ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		}
	}
	if len(stack) == 0 {
		return 0, 0
	}
	top := stack[len(stack)-1]
	return top.line, top.br
}

// Sections returns the YAML document data with only the given top-level
// keys (a sweep loads its traffic before any trial completes the rest).
func Sections(data []byte, keys ...string) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, errors.New(yamlMsg(err))
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return data, nil // empty, or not a mapping: Parse says what is wrong
	}
	root := doc.Content[0]
	kept := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	for i := 0; i+1 < len(root.Content); i += 2 {
		if slices.Contains(keys, root.Content[i].Value) {
			kept.Content = append(kept.Content, root.Content[i], root.Content[i+1])
		}
	}
	return yaml.Marshal(kept)
}
