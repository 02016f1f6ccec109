//go:build js && wasm

package main

import (
	"errors"
	"io"
	"net/http"
	"strconv"
	"syscall/js"
	"time"

	"github.com/syumai/workers"
)

// KVBinding is the Workers KV namespace binding that stores reports
// (declared in build/wrangler.jsonc).
const KVBinding = "RUNS"

func main() {
	env := js.Global().Get("context").Get("env")
	var store Store
	if ns := env.Get(KVBinding); ns.Truthy() {
		store = &kvStore{ns: ns, ttl: envInt(env, "RUN_TTL_SECONDS", 0)}
	}
	opts := optionsFromEnv(env)
	if assets := env.Get(AssetsBinding); assets.Truthy() {
		opts.KernelTable = assetKernelTable(assets) // timing.kernels: aic (kernels_js.go)
	}
	workers.Serve(streamBodies{NewHandler(store, opts)})
}

// streamBodies replaces syumai/workers' request body reader with
// streamBody, which keeps a read deadline and reads empty chunks as what
// they are (syumai's reader returns io.EOF on an empty chunk, so a body that
// the runtime delivers with one was cut short: "malformed multipart body:
// unexpected EOF" now and then on large uploads).
type streamBodies struct{ h http.Handler }

func (s streamBodies) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if g, ok := r.Body.(interface{ GetRawJSBody() js.Value }); ok {
		if st := g.GetRawJSBody(); st.Truthy() {
			r.Body = &streamBody{stream: st}
		}
	}
	s.h.ServeHTTP(w, r)
}

// streamBody is an io.ReadCloser over a JavaScript ReadableStream.
type streamBody struct {
	stream, reader js.Value
	buf            []byte
	deadline       time.Time
	err            error
}

// SetReadDeadline makes reads after t fail with errBodyTimeout.
func (b *streamBody) SetReadDeadline(t time.Time) error {
	b.deadline = t
	return nil
}

func (b *streamBody) Read(p []byte) (int, error) {
	for len(b.buf) == 0 {
		if b.err != nil {
			return 0, b.err
		}
		if b.reader.IsUndefined() {
			b.reader = b.stream.Call("getReader")
		}
		wait := 24 * time.Hour
		if !b.deadline.IsZero() {
			if wait = time.Until(b.deadline); wait <= 0 {
				b.err = errBodyTimeout
				return 0, b.err
			}
		}
		v, err := await(b.reader.Call("read"), wait)
		switch {
		case err == errTimeout:
			b.err = errBodyTimeout
		case err != nil:
			b.err = errors.New("reading the request body: " + err.Error())
		case v.Get("done").Truthy():
			b.err = io.EOF
		default:
			chunk := v.Get("value")
			if n := chunk.Get("byteLength").Int(); n > 0 { // empty chunks are not the end
				b.buf = make([]byte, n)
				js.CopyBytesToGo(b.buf, chunk)
			}
		}
	}
	n := copy(p, b.buf)
	b.buf = b.buf[n:]
	return n, nil
}

func (b *streamBody) Close() error {
	if !b.reader.IsUndefined() && b.err != io.EOF {
		b.reader.Call("cancel")
	}
	return nil
}

// optionsFromEnv reads the limits from the Worker's vars (all optional):
// MAX_BODY_BYTES, MAX_CONFIG_BYTES, BODY_TIMEOUT_MS, MAX_STORED_BYTES,
// CPU_BUDGET_MS and the explicit caps MAX_REQUESTS, MAX_PASSES,
// MAX_PROMPT_TOKENS, MAX_OUTPUT_TOKENS, MAX_STATE_BYTES.
func optionsFromEnv(env js.Value) Options {
	budget := envInt(env, "CPU_BUDGET_MS", DefaultCPUBudgetMs)
	lim := LimitsForBudget(budget)
	if v := envInt(env, "MAX_REQUESTS", -1); v >= 0 {
		lim.MaxRequests = v
	}
	if v := envInt(env, "MAX_PASSES", -1); v >= 0 {
		lim.MaxPasses = v
	}
	if v := envInt(env, "MAX_PROMPT_TOKENS", -1); v >= 0 {
		lim.MaxPromptTokens = v
	}
	if v := envInt(env, "MAX_OUTPUT_TOKENS", -1); v >= 0 {
		lim.MaxOutputTokens = v
	}
	if v := envInt(env, "MAX_STATE_BYTES", -1); v >= 0 {
		lim.MaxStateBytes = int64(v)
	}
	return Options{
		MaxBodyBytes:   int64(envInt(env, "MAX_BODY_BYTES", DefaultMaxBodyBytes)),
		MaxConfigBytes: int64(envInt(env, "MAX_CONFIG_BYTES", DefaultMaxConfigBytes)),
		BodyTimeout:    time.Duration(envInt(env, "BODY_TIMEOUT_MS", int(DefaultBodyTimeout/time.Millisecond))) * time.Millisecond,
		MaxStoredBytes: envInt(env, "MAX_STORED_BYTES", DefaultMaxStoredBytes),
		PageURL:        envString(env, "PAGE_URL"),
		Limits:         lim,
		// No Clock: Workers freeze Date.now() during CPU work, so a measured
		// wall time would read 0 anyway; the wall-clock fields stay 0.
	}
}

func envString(env js.Value, name string) string {
	if v := env.Get(name); v.Type() == js.TypeString {
		return v.String()
	}
	return ""
}

func envInt(env js.Value, name string, def int) int {
	v := env.Get(name)
	switch v.Type() {
	case js.TypeNumber:
		return v.Int()
	case js.TypeString:
		if n, err := strconv.Atoi(v.String()); err == nil {
			return n
		}
	}
	return def
}

// kvStore is a Store over a Workers KV namespace.
type kvStore struct {
	ns  js.Value
	ttl int // seconds; 0 keeps reports forever
}

var uint8Array = js.Global().Get("Uint8Array")

func (s *kvStore) Get(key string) ([]byte, bool, error) {
	var err error
	for try := 0; try < kvTries; try++ {
		var v js.Value
		opts := js.Global().Get("Object").New()
		opts.Set("type", "arrayBuffer")
		if v, err = await(s.ns.Call("get", key, opts), kvTimeout); err != nil {
			continue
		}
		if v.IsNull() || v.IsUndefined() {
			return nil, false, nil
		}
		u := uint8Array.New(v)
		b := make([]byte, u.Get("length").Int())
		js.CopyBytesToGo(b, u)
		return b, true, nil
	}
	return nil, false, err
}

func (s *kvStore) Put(key string, value []byte) error {
	u := uint8Array.New(len(value))
	js.CopyBytesToJS(u, value)
	opts := js.Undefined()
	if s.ttl >= 60 { // KV's minimum expirationTtl
		o := js.Global().Get("Object").New()
		o.Set("expirationTtl", s.ttl)
		opts = o
	}
	_, err := await(s.ns.Call("put", key, u.Get("buffer"), opts), kvTimeout)
	return err
}

// KV calls are bounded: a KV promise that never settles (seen on a loaded
// local workerd) must not hang the request. Reads are retried once.
const (
	kvTimeout = 10 * time.Second
	kvTries   = 2
)

var errTimeout = errors.New("timed out")

// await blocks the calling goroutine until the promise settles or the
// timeout passes; the Go runtime yields to the JavaScript event loop meanwhile.
func await(p js.Value, timeout time.Duration) (js.Value, error) {
	type result struct {
		v   js.Value
		err error
	}
	ch := make(chan result, 2) // buffered: a late settlement must not block
	then := js.FuncOf(func(_ js.Value, args []js.Value) any {
		v := js.Undefined()
		if len(args) > 0 {
			v = args[0]
		}
		ch <- result{v: v}
		return nil
	})
	catch := js.FuncOf(func(_ js.Value, args []js.Value) any {
		msg := "promise rejected"
		if len(args) > 0 {
			msg = js.Global().Get("String").Invoke(args[0]).String()
		}
		ch <- result{err: errors.New(msg)}
		return nil
	})
	p.Call("then", then, catch)
	select {
	case r := <-ch:
		then.Release()
		catch.Release()
		return r.v, r.err
	case <-time.After(timeout):
		// The callbacks stay alive: the promise may still settle.
		return js.Undefined(), errTimeout
	}
}
