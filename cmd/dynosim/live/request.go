package live

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

func (s *Server) tokenize(w http.ResponseWriter, r *http.Request) {
	var q completionRequest
	held, ok := s.decode(w, r, &q)
	defer held.free() // once the answer is written: the tokens are held till then
	if !ok {
		return
	}
	prompt, err := q.prompt(len(q.Messages) > 0)
	if err != nil {
		fail(w, http.StatusBadRequest, "BadRequestError", err.Error())
		return
	}
	writeTokens(w, prompt)
}

// writeTokens answers /tokenize, writing the ids as they are formatted:
// up to 11 bytes of JSON per id, a whole answer encoded at once was ten
// times its request's size.
func writeTokens(w http.ResponseWriter, ids []uint32) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	http.NewResponseController(w).SetWriteDeadline(time.Now().Add(writeTimeout))
	buf := make([]byte, 0, 32<<10)
	buf = append(strconv.AppendInt(append(buf, `{"count":`...), int64(len(ids)), 10), `,"tokens":[`...)
	for i, id := range ids {
		if len(buf) > cap(buf)-16 {
			if _, err := w.Write(buf); err != nil {
				return
			}
			buf = buf[:0]
		}
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = strconv.AppendUint(buf, uint64(id), 10)
	}
	w.Write(append(buf, "]}\n"...))
}

// decode reads a JSON request body into q, or answers 400 (413 past
// maxBody, 429 past the in-flight bytes, 408 past the read timeout). The
// lease holds the body's bytes against --max-inflight-bytes until freed.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, q *completionRequest) (*lease, bool) {
	if r.ContentLength > maxBody {
		// Refused before a byte is read or reserved.
		fail(w, http.StatusRequestEntityTooLarge, "BadRequestError", fmt.Sprintf("request body: %d bytes, more than the %d this server reads", r.ContentLength, maxBody))
		return nil, false
	}
	raw := r.Body
	held, err := s.budget.hold(r)
	if err != nil {
		s.busy(w, r, raw)
		return nil, false
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	err = json.NewDecoder(r.Body).Decode(q)
	if err == nil {
		// The rest (whitespace, or a body that stalls after its JSON) is
		// read within the read deadline too; only then is it lifted
		// (bodyDeadline), or Go's server would wait for it unbounded
		// before the answer's headers.
		_, err = io.Copy(io.Discard, r.Body)
	}
	if err == nil {
		http.NewResponseController(w).SetReadDeadline(time.Time{})
	}
	if err != nil {
		code := http.StatusBadRequest
		var ne net.Error
		switch _, tooLarge := errors.AsType[*http.MaxBytesError](err); {
		case tooLarge:
			code = http.StatusRequestEntityTooLarge
		case errors.Is(err, errBusy):
			held.free()
			s.busy(w, r, raw)
			return nil, false
		case errors.As(err, &ne) && ne.Timeout():
			code = http.StatusRequestTimeout
		}
		held.free()
		fail(w, code, "BadRequestError", "request body: "+err.Error())
		return nil, false
	}
	if q.Model != "" && q.Model != s.model {
		held.free()
		fail(w, http.StatusNotFound, "NotFoundError", fmt.Sprintf("The model `%s` does not exist (this server serves `%s`).", q.Model, s.model))
		return nil, false
	}
	return held, true
}

// busy answers a request past --max-inflight-bytes, then reads the rest
// of its body into nothing (no memory: its bytes are not kept), bounded by
// maxBody and the read timeout: a client that reads its answer only after
// sending its whole body (Python's http.client, most SDKs) got a broken
// pipe, not the 429 it could retry on, when the connection was closed
// under its upload. A client that asked to be told first (Expect:
// 100-continue, as curl does for large bodies) sends no body.
func (s *Server) busy(w http.ResponseWriter, r *http.Request, body io.Reader) {
	w.Header().Set("Retry-After", "1")
	fail(w, http.StatusTooManyRequests, "RateLimitError", fmt.Sprintf("the request bodies being read, tokenized or waiting for an engine reach --max-inflight-bytes (%d bytes); retry later", s.budget.max))
	http.NewResponseController(w).Flush()
	if !strings.EqualFold(r.Header.Get("Expect"), "100-continue") {
		io.CopyN(io.Discard, body, maxBody)
	}
}

// parse reads and checks a completion request (chat: a chat one): its
// prompt's tokens and output length, within the rules predict's engine
// applies. On false it has answered the error. The lease holds the body's
// bytes against --max-inflight-bytes until freed.
func (s *Server) parse(w http.ResponseWriter, r *http.Request, chat bool) (q completionRequest, prompt []uint32, n int, held *lease, ok bool) {
	if held, ok = s.decode(w, r, &q); !ok {
		return q, nil, 0, nil, false
	}
	prompt, err := q.prompt(chat)
	if err == nil && len(prompt) == 0 {
		err = errors.New("prompt: is empty")
	}
	if err == nil && q.N != nil && *q.N != 1 {
		err = fmt.Errorf("n: only 1 is supported, got %d", *q.N)
	}
	if err == nil {
		n, err = q.maxTokens(chat)
	}
	if err == nil && q.Priority != nil {
		err = s.d.live.CheckPriority(*q.Priority)
	}
	if err == nil {
		// What predict's engine would reject as never fitting is refused
		// now, by the same rule (engine.Config.Fits), not streamed until
		// the engine gives up on it (issue 29 item 8).
		_, err = s.d.live.Fits(len(prompt), n)
	}
	if err != nil {
		held.free()
		fail(w, http.StatusBadRequest, "BadRequestError", err.Error())
		return q, nil, 0, nil, false
	}
	return q, prompt, n, held, true
}
