package live

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/dynosim/dynosim-web/core/replay"
)

// writer answers one completion: Server-Sent Events in OpenAI's chunk
// format as tokens come, or one JSON body at the end. Headers go out with
// the first token, as vLLM sends its first chunk with the first output, so
// a client's time to first chunk is its time to first token, and a
// request the engine rejects before any token still gets an HTTP error.
type writer struct {
	s       *Server
	w       http.ResponseWriter
	rc      *http.ResponseController
	st      *stream
	chat    bool
	stream  bool
	usage   bool // report usage (streams: stream_options.include_usage)
	started bool
	id      string
	n       int
	text    strings.Builder
	buf     []byte
}

func (o *writer) serve(ctx context.Context) {
	var toks []uint32
	for {
		select {
		case <-o.st.notify:
		case <-ctx.Done():
			o.s.d.abort(o.st) // the client went away: free its KV
			return
		}
		var ended bool
		toks, ended = o.st.take(toks)
		if len(toks) > 0 && !o.tokens(toks) {
			o.s.d.abort(o.st)
			return
		}
		if ended {
			break
		}
	}
	o.end()
}

// tokens sends or keeps toks; false if the client is gone.
func (o *writer) tokens(toks []uint32) bool {
	o.n += len(toks)
	if !o.stream {
		for _, t := range toks {
			o.text.WriteString(Text(t))
		}
		return true
	}
	o.deadline()
	if !o.started {
		o.start()
	}
	for _, t := range toks {
		text := Text(t)
		o.chunk(o.choice(&text, nil), nil)
	}
	return o.rc.Flush() == nil
}

// writeTimeout bounds one write to a client: one that stops reading is
// cut off (and its request aborted) rather than holding its handler.
var writeTimeout = 30 * time.Second

func (o *writer) deadline() { o.rc.SetWriteDeadline(time.Now().Add(writeTimeout)) }

func (o *writer) start() {
	o.started = true
	o.st.mu.Lock()
	id := o.st.id
	o.st.mu.Unlock()
	o.id = "cmpl-" + itoa(id)
	if o.chat {
		o.id = "chatcmpl-" + itoa(id)
	}
	h := o.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	o.w.WriteHeader(http.StatusOK)
	if o.chat {
		empty := ""
		c := choice{Delta: &assistantMsg{Role: "assistant", Content: &empty}}
		o.chunk(c, nil)
	}
}

// choice is a chunk's (or a response's) one choice.
func (o *writer) choice(text *string, finish *string) choice {
	c := choice{FinishReason: finish}
	switch {
	case !o.chat:
		if text == nil {
			text = new(string)
		}
		c.Text = text
	case o.stream:
		c.Delta = &assistantMsg{Content: text}
		if text == nil {
			c.Delta = &assistantMsg{}
		}
	default:
		c.Message = &assistantMsg{Role: "assistant", Content: text}
	}
	return c
}

func (o *writer) object() string {
	switch {
	case o.chat && o.stream:
		return "chat.completion.chunk"
	case o.chat:
		return "chat.completion"
	}
	return "text_completion"
}

// chunk writes one SSE event; a nil choice with usage is the usage chunk.
func (o *writer) chunk(c choice, u *usage) {
	r := response{ID: o.id, Object: o.object(), Created: o.s.created, Model: o.s.model, Choices: []choice{c}, Usage: u}
	if u != nil {
		r.Choices = []choice{}
	}
	o.buf = append(o.buf[:0], "data: "...)
	b, _ := json.Marshal(r)
	o.buf = append(append(o.buf, b...), "\n\n"...)
	o.w.Write(o.buf)
}

// end answers once the request ended.
func (o *writer) end() {
	o.st.mu.Lock()
	reason, err, cached, id := o.st.reason, o.st.err, o.st.cached, o.st.id
	o.st.mu.Unlock()
	msg, code, typ := "", 0, ""
	switch {
	case err != nil:
		msg, code, typ = err.Error(), http.StatusServiceUnavailable, "ServiceUnavailableError"
	case reason == replay.Aborted:
		return // its client is gone
	case reason != "":
		msg, code, typ = rejection(reason), http.StatusBadRequest, "BadRequestError"
	}
	o.deadline()
	if msg != "" {
		if !o.started {
			fail(o.w, code, typ, msg)
			return
		}
		// Mid-stream, as vLLM does: an error event, then the end.
		var e apiError
		e.Error.Message, e.Error.Type, e.Error.Code = msg, typ, code
		b, _ := json.Marshal(e)
		o.w.Write([]byte("data: " + string(b) + "\n\ndata: [DONE]\n\n"))
		o.rc.Flush()
		return
	}
	u := &usage{PromptTokens: o.st.promptLen, CompletionTokens: o.n, TotalTokens: o.st.promptLen + o.n}
	u.Details.CachedTokens = cached
	finish := "length" // no end-of-sequence token: every request runs to max_tokens
	if !o.stream {
		o.id = "cmpl-" + itoa(id)
		if o.chat {
			o.id = "chatcmpl-" + itoa(id)
		}
		text := o.text.String()
		writeJSON(o.w, http.StatusOK, response{ID: o.id, Object: o.object(), Created: o.s.created, Model: o.s.model,
			Choices: []choice{o.choice(&text, &finish)}, Usage: u})
		return
	}
	if !o.started {
		o.start()
	}
	o.chunk(o.choice(nil, &finish), nil)
	if o.usage {
		o.chunk(choice{}, u)
	}
	o.w.Write([]byte("data: [DONE]\n\n"))
	o.rc.Flush()
}
