package live

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/dynosim/dynosim-web/core/workload"
)

// The OpenAI request fields live mode reads; the rest (temperature, top_p,
// stop, seed, …) are accepted and ignored: sampling does not change what a
// simulated engine schedules.
type completionRequest struct {
	Model         string          `json:"model"`
	Prompt        json.RawMessage `json:"prompt"`   // /v1/completions
	Messages      []chatMessage   `json:"messages"` // /v1/chat/completions
	MaxTokens     *int            `json:"max_tokens"`
	MaxCompletion *int            `json:"max_completion_tokens"`
	Stream        bool            `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	N *int `json:"n"`
	// Priority is vLLM's request priority extension (lower is served
	// first under --scheduling-policy priority; 0 otherwise).
	Priority *int64 `json:"priority"`
}

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// Defaults of max_tokens when a request gives none: OpenAI's legacy
// completions default, and a chat answer's worth.
const (
	defaultCompletionTokens = 16
	defaultChatTokens       = 256
)

// prompt is the request's prompt as token ids.
func (q *completionRequest) prompt(chat bool) ([]uint32, error) {
	if chat {
		if len(q.Messages) == 0 {
			return nil, fmt.Errorf("messages: must hold at least one message")
		}
		msgs := make([]Message, len(q.Messages))
		for i, m := range q.Messages {
			text, err := content(m.Content)
			if err != nil {
				return nil, fmt.Errorf("messages[%d].content: %w", i, err)
			}
			msgs[i] = Message{Role: m.Role, Content: text}
		}
		return ChatPrompt(nil, msgs), nil
	}
	// One decode, picked by the JSON's shape: trying each form in turn
	// scanned a long token-id prompt three times, in the client's TTFT.
	raw := bytes.TrimLeft(q.Prompt, " \t\r\n")
	if len(raw) > 0 && raw[0] == '[' {
		inner := bytes.TrimLeft(raw[1:], " \t\r\n")
		switch {
		case len(inner) > 0 && inner[0] == '"':
			var texts []string
			if json.Unmarshal(raw, &texts) != nil || len(texts) != 1 {
				return nil, fmt.Errorf("prompt: one prompt per request, as a string or an array of token ids")
			}
			return Tokenize(nil, texts[0]), nil
		case len(inner) > 0 && inner[0] == '[':
			var batch []json.RawMessage
			if json.Unmarshal(raw, &batch) != nil || len(batch) != 1 {
				return nil, fmt.Errorf("prompt: one prompt per request, as a string or an array of token ids")
			}
			raw = batch[0]
		}
		return tokenIDs(raw)
	}
	var text string
	if json.Unmarshal(raw, &text) != nil {
		return nil, fmt.Errorf("prompt: must be a string or an array of token ids")
	}
	return Tokenize(nil, text), nil
}

// tokenIDs parses a JSON array of token ids, in one pass without
// reflection (a prompt may hold a hundred thousand of them).
func tokenIDs(raw []byte) ([]uint32, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) < 2 || raw[0] != '[' || raw[len(raw)-1] != ']' {
		return nil, fmt.Errorf("prompt: must be a string or an array of token ids")
	}
	body := bytes.TrimSpace(raw[1 : len(raw)-1])
	out := make([]uint32, 0, len(body)/6+1)
	for i := 0; len(body) > 0; i++ {
		item := body
		if k := bytes.IndexByte(body, ','); k >= 0 {
			item, body = body[:k], body[k+1:]
			if len(bytes.TrimSpace(body)) == 0 {
				return nil, fmt.Errorf("prompt[%d]: missing after a comma", i+1)
			}
		} else {
			body = nil
		}
		id, err := strconv.ParseInt(string(bytes.TrimSpace(item)), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("prompt[%d]: %q is not a token id", i, bytes.TrimSpace(item))
		}
		if id < 0 || id > math.MaxUint32 {
			return nil, fmt.Errorf("prompt[%d]: token id %d is out of range", i, id)
		}
		out = append(out, uint32(id))
	}
	return out, nil
}

// content is a message's text: a string, or the text parts of an array.
func content(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", fmt.Errorf("must be a string or an array of content parts")
	}
	for _, p := range parts {
		if p.Type != "text" {
			return "", fmt.Errorf("content part %q: only text is simulated", p.Type)
		}
		s += p.Text
	}
	return s, nil
}

// priority is the request's priority (0 if none), already checked.
func (q *completionRequest) priority() int32 {
	if q.Priority == nil {
		return 0
	}
	return int32(*q.Priority)
}

// maxTokens is the requested output length.
func (q *completionRequest) maxTokens(chat bool) (int, error) {
	n := defaultCompletionTokens
	if chat {
		n = defaultChatTokens
	}
	for _, v := range []*int{q.MaxTokens, q.MaxCompletion} {
		if v != nil {
			n = *v
		}
	}
	if n < 1 {
		return 0, fmt.Errorf("max_tokens: must be ≥ 1, got %d", n)
	}
	// The bound a trace's output lengths have (predict): a request's token
	// counts size its block list, so an unbounded value is an allocation
	// the client chooses (2^62 panicked in makeslice, 1e10 ran out of
	// memory, 2^63−1 wrapped and never ended).
	if n > workload.MaxRequestTokens {
		return 0, fmt.Errorf("max_tokens: must be ≤ %d, got %d", workload.MaxRequestTokens, n)
	}
	return n, nil
}

// Responses and chunks, in OpenAI's shapes.
type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
	Details          struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

type choice struct {
	Index        int           `json:"index"`
	Text         *string       `json:"text,omitempty"`
	Message      *assistantMsg `json:"message,omitempty"`
	Delta        *assistantMsg `json:"delta,omitempty"`
	Logprobs     *struct{}     `json:"logprobs"`
	FinishReason *string       `json:"finish_reason"`
}

type assistantMsg struct {
	Role    string  `json:"role,omitempty"`
	Content *string `json:"content,omitempty"`
}

type response struct {
	ID      string   `json:"id"`
	Object  string   `json:"object"`
	Created int64    `json:"created"`
	Model   string   `json:"model"`
	Choices []choice `json:"choices"`
	Usage   *usage   `json:"usage,omitempty"`
}

type apiError struct {
	Error struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Param   any    `json:"param"`
		Code    int    `json:"code"`
	} `json:"error"`
}
