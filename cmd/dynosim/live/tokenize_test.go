package live

import (
	"slices"
	"testing"
	"unicode/utf8"
)

func TestTokenize(t *testing.T) {
	for _, tc := range []struct {
		text string
		n    int
	}{
		{"", 0},
		{"hello", 1},
		{"hello world", 2},
		{"Hello, world!", 4},
		{"12345", 2},                // digits in threes
		{"internationalization", 3}, // long words are cut every 8 bytes
		{"a  b", 3},                 // "a", " ", " b"
		{"line\n\nnext", 3},
		{"héllo wörld", 2},
	} {
		got := Tokenize(nil, tc.text)
		if len(got) != tc.n {
			t.Errorf("%q: %d tokens, want %d", tc.text, len(got), tc.n)
		}
		for _, id := range got {
			if id>>31 != 0 {
				t.Errorf("%q: id %x collides with the special tokens", tc.text, id)
			}
		}
	}
	// Shared text prefixes are shared token prefixes, whatever follows.
	a := Tokenize(nil, "You are a helpful assistant. Tell me about Paris.")
	b := Tokenize(nil, "You are a helpful assistant. Tell me about Rome, please.")
	if k := len(Tokenize(nil, "You are a helpful assistant. Tell me about")); !slices.Equal(a[:k], b[:k]) || a[k] == b[k] {
		t.Errorf("prefix not shared: %v vs %v", a, b)
	}
	// Chat prompts with one system prompt share its tokens.
	sys := Message{"system", "You are terse."}
	c1 := ChatPrompt(nil, []Message{sys, {"user", "hi"}})
	c2 := ChatPrompt(nil, []Message{sys, {"user", "bye"}})
	if k := len(ChatPrompt(nil, []Message{sys})) - 3; !slices.Equal(c1[:k], c2[:k]) {
		t.Errorf("system prompt not shared")
	}
}

// FuzzTokenize: every input tokenizes without panicking, deterministically,
// into at most one token per byte, and a prefix that ends at a piece
// boundary tokenizes into a prefix.
func FuzzTokenize(f *testing.F) {
	for _, s := range []string{"", "hello world", "a\n\n b  c", "1234567", "ééé", "\xff\xfe", "x, y; z."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a := Tokenize(nil, s)
		if len(a) > len(s) || !slices.Equal(a, Tokenize(nil, s)) {
			t.Fatalf("%q: %d tokens", s, len(a))
		}
		if utf8.ValidString(s) && len(s) > 0 {
			n := piece(s)
			if got := Tokenize(nil, s[:n]); !slices.Equal(got, a[:len(got)]) {
				t.Fatalf("%q: first piece %q tokenizes to %v, whole to %v", s, s[:n], got, a)
			}
		}
	})
}
