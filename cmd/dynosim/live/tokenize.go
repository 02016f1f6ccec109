package live

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/zeebo/xxh3"
)

// The live tokenizer turns text into token ids deterministically, so that
// requests sharing a text prefix share a token prefix and prefix caching
// sees what it would see behind a real tokenizer. It is not a model's
// vocabulary, only close to one in count (about 1.1 tokens per English
// word; docs/live.md): the text is cut into pieces the way GPT-2's
// pre-tokenizer does (a run of letters with its leading space, a run of up
// to three digits, one other character, a run of spaces or of newlines),
// a piece longer than maxPiece bytes is cut every maxPiece bytes, and a
// piece's id is the low 31 bits of its xxh3 hash. Ids with the top bit
// set are the chat template's special tokens. Clients that need exact
// counts send token ids.

const maxPiece = 8

// Tokenize appends the token ids of text to dst.
func Tokenize(dst []uint32, text string) []uint32 {
	for len(text) > 0 {
		n := piece(text)
		for n > maxPiece {
			dst = append(dst, tokenID(text[:maxPiece]))
			text, n = text[maxPiece:], n-maxPiece
		}
		dst = append(dst, tokenID(text[:n]))
		text = text[n:]
	}
	return dst
}

func tokenID(p string) uint32 { return uint32(xxh3.HashString(p)) &^ (1 << 31) }

// piece is the byte length of the first pre-token of s (s is not empty).
func piece(s string) int {
	i := 0
	if s[0] == ' ' && len(s) > 1 && s[1] != ' ' {
		i = 1 // a word keeps its leading space
	}
	r, w := utf8.DecodeRuneInString(s[i:])
	switch {
	case unicode.IsLetter(r):
		return i + run(s[i:], unicode.IsLetter, -1)
	case unicode.IsDigit(r):
		return i + run(s[i:], unicode.IsDigit, 3)
	case r == '\n' || r == '\r':
		return i + run(s[i:], func(r rune) bool { return r == '\n' || r == '\r' }, -1)
	case unicode.IsSpace(r):
		return i + run(s[i:], func(r rune) bool { return unicode.IsSpace(r) && r != '\n' && r != '\r' }, -1)
	}
	return i + w
}

// run is the byte length of the leading runes of s that match, at most
// limit of them (-1: no limit).
func run(s string, match func(rune) bool, limit int) int {
	n := 0
	for k := 0; n < len(s) && k != limit; k++ {
		r, w := utf8.DecodeRuneInString(s[n:])
		if !match(r) {
			break
		}
		n += w
	}
	return max(n, 1)
}

// Chat template: ChatML, as Qwen and many others use: every message is
// <|im_start|>role\n content <|im_end|>\n, and the prompt ends with
// <|im_start|>assistant\n (the generation prompt). The markers are single
// special tokens.
const (
	imStart = 1<<31 | 1
	imEnd   = 1<<31 | 2
)

// Message is one chat message.
type Message struct {
	Role, Content string
}

// ChatPrompt appends the token ids of the chat template applied to msgs.
func ChatPrompt(dst []uint32, msgs []Message) []uint32 {
	for _, m := range msgs {
		dst = append(dst, imStart)
		dst = Tokenize(dst, m.Role+"\n"+m.Content)
		dst = append(dst, imEnd)
		dst = Tokenize(dst, "\n")
	}
	dst = append(dst, imStart)
	return Tokenize(dst, "assistant\n")
}

// words are the placeholder text of generated tokens: the simulator knows
// how many tokens a request generates and when, not what they say.
var words = strings.Fields("lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut labore et dolore magna aliqua enim ad minim veniam quis nostrud exercitation ullamco laboris nisi aliquip ex ea commodo")

// Text is the placeholder text of generated token t: one word with its
// leading space.
func Text(t uint32) string { return " " + words[t%uint32(len(words))] }
