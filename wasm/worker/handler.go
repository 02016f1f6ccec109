// Command worker is the Cloudflare Worker front end of DynoSim: an HTTP API
// that runs the same core as the CLI and the page and stores each report under
// an id derived from its inputs, so a run can be shared as a URL.
//
//	POST /v1/predict   multipart/form-data: config (YAML), trace (file, optional),
//	                   profile (.npz, optional), model (HF config.json, optional),
//	                   set (PATH=VALUE, repeatable)
//	GET  /v1/runs/{id} the stored report (a browser's navigation: a 303 to
//	                   the page, <PAGE_URL>?run={id}, when PAGE_URL is set)
//	GET  /v1/runs/{id}/inputs the config and file names the run was given
//	GET  /v1/health    liveness, version and limits
//
// The handler in this file is plain net/http and builds on every target; the
// js/wasm main (main_js.go) serves it with github.com/syumai/workers and a
// Workers KV namespace, the native main (main_native.go) with an in-memory
// store for debugging. No simulation logic lives here: one call to sim.Predict.
package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dynosim/dynosim-web/core/recommend"
	"github.com/dynosim/dynosim-web/core/sim"
	"github.com/dynosim/dynosim-web/timing/kernels"
)

// Version names the product build; it is hashed into every run id so that a
// new build never serves a report computed by an older one. The Makefile sets
// it with -ldflags "-X main.Version=...".
var Version = "dev"

// Store keeps reports by run id (a Workers KV namespace in production).
type Store interface {
	// Get returns the value and true, or nil and false if the key is unknown.
	Get(key string) ([]byte, bool, error)
	Put(key string, value []byte) error
}

// Options configure the handler.
type Options struct {
	MaxBodyBytes int64 // request body cap; 413 beyond it
	// MaxConfigBytes caps the config field plus the set fields (413 beyond,
	// before any parsing): YAML parsing costs far more per byte than a trace.
	MaxConfigBytes int64
	// BodyTimeout is the read deadline of a request body: a body still
	// arriving after it is answered with 408.
	BodyTimeout time.Duration
	Limits      sim.Limits // passed to every run; 413 when a run exceeds them
	// MaxStoredBytes caps a report the handler stores (0:
	// DefaultMaxStoredBytes): a larger one is answered without a run URL.
	MaxStoredBytes int
	// Clock, if set, measures the run for the report's wall-clock fields.
	// In Workers the clock does not advance during CPU work, so it is nil there
	// and those fields stay 0.
	Clock func() time.Time
	// PageURL is the DynoSim page that renders runs (share.go): stored runs
	// are shared as PageURL?run={id}. "" (or not an http(s) URL): none.
	PageURL string
	// KernelTable gives `timing.kernels: aic` runs their measured kernel
	// table (sim.Inputs.KernelTable; in Workers from the static assets,
	// kernels_js.go). Nil: the key is refused.
	KernelTable func(gpu, engine string) (*kernels.Table, error)
}

// Defaults of the options left zero.
const (
	DefaultMaxBodyBytes   = 32 << 20
	DefaultMaxConfigBytes = 256 << 10
	DefaultBodyTimeout    = 30 * time.Second
	// DefaultMaxStoredBytes is Workers KV's largest value (25 MiB,
	// developers.cloudflare.com/kv/platform/limits): a larger put fails.
	DefaultMaxStoredBytes = 25 << 20
)

const (
	runKeyPrefix = "run:"
	runIDLen     = 32 // hex digits (128 bits of SHA-256)
)

// Handler serves the Worker's HTTP API.
type Handler struct {
	store Store
	opt   Options
	mu    sync.Mutex // serialises native runs; in Workers each request has its own instance
}

// NewHandler returns the API handler. store may be nil: runs then work but
// are not stored.
func NewHandler(store Store, opt Options) *Handler {
	if opt.MaxBodyBytes <= 0 {
		opt.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opt.MaxConfigBytes <= 0 {
		opt.MaxConfigBytes = DefaultMaxConfigBytes
	}
	if opt.BodyTimeout <= 0 {
		opt.BodyTimeout = DefaultBodyTimeout
	}
	if opt.MaxStoredBytes <= 0 {
		opt.MaxStoredBytes = DefaultMaxStoredBytes
	}
	opt.PageURL = pageURL(opt.PageURL)
	return &Handler{store: store, opt: opt}
}

// ServeHTTP dispatches the API routes. Every response is JSON; errors are
// {"error": "<one line>"}.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if v := recover(); v != nil {
			// A panic is a bug, not bad input: say so rather than hang the
			// Worker (an unrecovered panic kills the Go instance mid-request).
			writeError(w, http.StatusInternalServerError, fmt.Sprintf("internal error: %v", v))
			return
		}
	}()
	hd := w.Header()
	hd.Set("Access-Control-Allow-Origin", "*")
	hd.Set("Access-Control-Expose-Headers", "Location, X-Dynosim-Run-Id, X-Dynosim-Share-URL, X-Dynosim-Cache, X-Dynosim-Reason")
	if r.Method == http.MethodOptions {
		hd.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
		hd.Set("Access-Control-Allow-Headers", "Content-Type")
		hd.Set("Access-Control-Max-Age", "86400")
		w.WriteHeader(http.StatusNoContent)
		return
	}
	p := r.URL.Path
	switch {
	case p == "/v1/predict":
		if r.Method != http.MethodPost {
			methodNotAllowed(w, "POST")
			return
		}
		h.predict(w, r)
	case strings.HasPrefix(p, "/v1/runs/"):
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			methodNotAllowed(w, "GET")
			return
		}
		id := strings.TrimPrefix(p, "/v1/runs/")
		if id, ok := strings.CutSuffix(id, "/inputs"); ok {
			h.getInputs(w, id)
			return
		}
		h.getRun(w, r, id)
	case p == "/v1/health" || p == "/":
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			methodNotAllowed(w, "GET")
			return
		}
		h.health(w)
	default:
		writeError(w, http.StatusNotFound, "no such endpoint: "+oneLine(p)+" (try POST /v1/predict, GET /v1/runs/{id}, GET /v1/health)")
	}
}

func (h *Handler) health(w http.ResponseWriter) {
	b, _ := json.Marshal(map[string]any{
		"status":            "ok",
		"version":           Version,
		"storage":           h.store != nil,
		"max_body_bytes":    h.opt.MaxBodyBytes,
		"max_requests":      h.opt.Limits.MaxRequests,
		"max_passes":        h.opt.Limits.MaxPasses,
		"max_prompt_tokens": h.opt.Limits.MaxPromptTokens,
		"max_state_bytes":   h.opt.Limits.MaxStateBytes,
		"max_output_tokens": h.opt.Limits.MaxOutputTokens,
		"max_config_bytes":  h.opt.MaxConfigBytes,
		"body_timeout_ms":   h.opt.BodyTimeout.Milliseconds(),
		"max_stored_bytes":  h.opt.MaxStoredBytes,
	})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	writeBody(w, http.StatusOK, append(b, '\n'))
}

// inputs are the fields of one POST /v1/predict.
type inputs struct {
	config, trace, profile, model                 []byte
	configName, traceName, profileName, modelName string
	sets                                          []string
	hasConfig, hasTrace, hasProfile, hasModel     bool
	traceNameField                                string // explicit trace_name field
	watch                                         uint64 // timeline field: the request whose life the report records
}

func (h *Handler) predict(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength > h.opt.MaxBodyBytes {
		// Known too large: answer at once, reading nothing (the declared
		// body may never come).
		writeError(w, http.StatusRequestEntityTooLarge, tooLarge(r.ContentLength, h.opt.MaxBodyBytes))
		return
	}
	body, stop := withDeadline(w, r.Body, h.opt.BodyTimeout)
	in, status, msg := h.readInputs(w, r, body)
	if status != http.StatusRequestTimeout {
		// Read what is left of the body (bounded, and within the read
		// deadline) before answering: a runtime whose request stream is
		// cancelled half-read may drop the connection, and the client then
		// sees a reset instead of the answer (a local workerd also failed
		// the next request on it with 503).
		io.Copy(io.Discard, io.LimitReader(body, 2*h.opt.MaxBodyBytes))
	}
	stop()
	if status != 0 {
		writeError(w, status, msg)
		return
	}
	id := runID(in)
	if h.store != nil {
		b, ok, err := h.store.Get(runKeyPrefix + id)
		if err == nil && ok {
			h.storeInputs(id, in) // runs stored before inputs were kept
			h.setShareHeader(w, id)
			writeReport(w, http.StatusOK, id, "hit", true, b)
			return
		}
	}
	b, err := h.run(in)
	if err != nil {
		status := http.StatusBadRequest
		if isTooLarge(err) {
			status = http.StatusRequestEntityTooLarge
		}
		// A search (dynosim recommend --remote) records why a candidate
		// failed, as it does locally.
		w.Header().Set("X-Dynosim-Reason", recommend.Category(err))
		writeError(w, status, err.Error())
		return
	}
	cache, stored := h.storeRun(id, b)
	if stored {
		h.storeInputs(id, in)
		h.setShareHeader(w, id)
	}
	writeReport(w, http.StatusOK, id, cache, stored, b)
}

// run calls the core once.
func (h *Handler) run(in *inputs) ([]byte, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var start time.Time
	if h.opt.Clock != nil {
		start = h.opt.Clock()
	}
	rep, err := sim.Predict(sim.Inputs{
		Config:          in.config,
		ConfigName:      in.configName,
		Sets:            in.sets,
		Trace:           in.trace,
		TraceName:       in.traceName,
		Profile:         in.profile,
		ProfileName:     in.profileName,
		ModelConfig:     in.model,
		ModelConfigName: in.modelName,
		Watch:           in.watch,
		Limits:          h.opt.Limits,
		KernelTable:     h.opt.KernelTable,
	}, nil)
	if err != nil {
		return nil, err
	}
	if rep == nil {
		return nil, errors.New("the simulator returned no report")
	}
	if h.opt.Clock != nil {
		rep.SetWallTime(float64(h.opt.Clock().Sub(start).Nanoseconds()) / 1e6)
	}
	b, err := rep.JSON()
	if err != nil {
		return nil, err
	}
	if len(b) == 0 || b[len(b)-1] != '\n' {
		b = append(b, '\n') // same bytes as the CLI's stdout
	}
	return b, nil
}

// readInputs reads the multipart body. A non-zero status is an error answer.
func (h *Handler) readInputs(w http.ResponseWriter, r *http.Request, rawBody io.Reader) (*inputs, int, string) {
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		return nil, http.StatusBadRequest, "expected a multipart/form-data body with fields config, trace (optional), profile (optional), e.g. curl -F config=@config.yaml -F trace=@trace.jsonl"
	}
	body := &firstErr{r: http.MaxBytesReader(w, io.NopCloser(rawBody), h.opt.MaxBodyBytes)}
	mr := multipart.NewReader(body, params["boundary"])
	in := &inputs{}
	configBytes := int64(0) // config and set fields (Options.MaxConfigBytes)
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			st, msg := bodyErr(body.or(err), r.ContentLength, h.opt.MaxBodyBytes)
			return nil, st, msg
		}
		name := part.FormName()
		file := baseName(part.FileName())
		var src io.Reader = part
		small := name == "config" || name == "set" || name == "trace_name" || name == "timeline"
		if small {
			src = io.LimitReader(part, h.opt.MaxConfigBytes-configBytes+1)
		}
		var buf bytes.Buffer
		if _, err := buf.ReadFrom(src); err != nil {
			st, msg := bodyErr(body.or(err), r.ContentLength, h.opt.MaxBodyBytes)
			return nil, st, msg
		}
		if small {
			if configBytes += int64(buf.Len()); configBytes > h.opt.MaxConfigBytes {
				what := "the set fields"
				if name == "config" {
					what = or(file, "config.yaml")
				}
				return nil, http.StatusRequestEntityTooLarge, fmt.Sprintf("%s: over this service's limit of %d bytes of config (config and set fields together): run large configs with the dynosim CLI or the web page", what, h.opt.MaxConfigBytes)
			}
		}
		if st, msg := in.field(name, file, &buf); st != 0 {
			return nil, st, msg
		}
	}
	if !in.hasConfig {
		return nil, http.StatusBadRequest, `missing form field config (YAML text; "{}" selects every default)`
	}
	if in.hasTrace && in.traceNameField != "" {
		in.traceName = in.traceNameField
	}
	return in, 0, ""
}

// field stores form field name (file: its file name) of the request, or
// returns the status and message of a bad field.
func (in *inputs) field(name, file string, buf *bytes.Buffer) (int, string) {
	switch name {
	case "config":
		if in.hasConfig {
			return http.StatusBadRequest, "field config given twice"
		}
		in.config, in.configName, in.hasConfig = buf.Bytes(), or(file, "config.yaml"), true
	case "trace":
		if in.hasTrace {
			return http.StatusBadRequest, "field trace given twice"
		}
		in.trace, in.traceName, in.hasTrace = nonNil(buf.Bytes()), or(file, "trace.jsonl"), true
	case "trace_name": // names a trace sent as a plain field (its extension picks the format)
		in.traceNameField = baseName(strings.TrimSpace(buf.String()))
	case "profile":
		if in.hasProfile {
			return http.StatusBadRequest, "field profile given twice"
		}
		in.profile, in.profileName, in.hasProfile = nonNil(buf.Bytes()), or(file, "profile.npz"), true
	case "model": // an HF config.json standing for engine.model
		if in.hasModel {
			return http.StatusBadRequest, "field model given twice"
		}
		in.model, in.modelName, in.hasModel = nonNil(buf.Bytes()), or(file, "config.json"), true
	case "set":
		in.sets = append(in.sets, strings.TrimSpace(buf.String()))
	case "timeline": // a request uuid: the report gains its request_timeline
		v := strings.TrimSpace(buf.String())
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil || n == 0 {
			return http.StatusBadRequest, fmt.Sprintf("field timeline: must be a request uuid (an integer ≥ 1), got %q", oneLine(v))
		}
		in.watch = n
	default:
		return http.StatusBadRequest, fmt.Sprintf("unknown form field %q (expected config, trace, trace_name, profile, model, set, timeline)", oneLine(name))
	}
	return 0, ""
}

// firstErr remembers the first failed read of the body. The multipart
// parser can hide it: textproto reports a part header line cut short by a
// read that failed (the deadline, the size cap) as a malformed header
// ("missing colon"), which would answer 400 for what is a 408 or a 413.
type firstErr struct {
	r   io.Reader
	err error
}

func (f *firstErr) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err != nil && err != io.EOF && f.err == nil {
		f.err = err
	}
	return n, err
}

// or returns the body's own read error, if any, else the parser's err.
func (f *firstErr) or(err error) error {
	if f.err != nil {
		return f.err
	}
	return err
}

func bodyErr(err error, got, max int64) (int, string) {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return http.StatusRequestEntityTooLarge, tooLarge(got, max)
	}
	if errors.Is(err, errBodyTimeout) {
		return http.StatusRequestTimeout, err.Error()
	}
	return http.StatusBadRequest, "malformed multipart body: " + oneLine(err.Error())
}

func tooLarge(got, max int64) string {
	size := "the request body"
	if got > 0 {
		size = fmt.Sprintf("the request body (%d bytes)", got)
	}
	return fmt.Sprintf("%s exceeds this service's limit of %d bytes: run large workloads with the dynosim CLI or the web page", size, max)
}

// isTooLarge tells a run refused by sim.Limits from bad input.
func isTooLarge(err error) bool { return errors.Is(err, sim.ErrTooLarge) }

// runID is the content hash of the inputs and the product version:
// SHA-256 over length-prefixed fields, first 128 bits in hex.
func runID(in *inputs) string {
	h := sha256.New()
	field := func(b []byte) {
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	field([]byte("dynosim-run/v1"))
	field([]byte(Version))
	field(in.config)
	field([]byte(in.configName))
	field(in.trace)
	field([]byte(in.traceName))
	field(in.profile)
	field([]byte(in.profileName))
	if in.hasModel { // only then: ids of runs without a model stay as they were
		field([]byte("model"))
		field(in.model)
		field([]byte(in.modelName))
	}
	for _, s := range in.sets {
		field([]byte(s))
	}
	if in.watch != 0 { // only then, as for the model
		field([]byte("timeline"))
		field([]byte(strconv.FormatUint(in.watch, 10)))
	}
	return hex.EncodeToString(h.Sum(nil))[:runIDLen]
}

func validRunID(id string) bool {
	if len(id) != runIDLen {
		return false
	}
	for _, c := range id {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// writeBody sends a complete JSON body.
func writeBody(w http.ResponseWriter, status int, b []byte) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write(b)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	b, _ := json.Marshal(map[string]string{"error": oneLine(msg)})
	hd := w.Header()
	hd.Set("Content-Type", "application/json")
	hd.Set("Cache-Control", "no-store")
	writeBody(w, status, append(b, '\n'))
}

func methodNotAllowed(w http.ResponseWriter, allow string) {
	w.Header().Set("Allow", allow+", OPTIONS")
	writeError(w, http.StatusMethodNotAllowed, "method not allowed (use "+allow+")")
}

// oneLine folds whitespace runs (including newlines) into single spaces.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func baseName(name string) string {
	if name == "" {
		return ""
	}
	name = path.Base(strings.ReplaceAll(name, `\`, "/"))
	if name == "." || name == "/" {
		return ""
	}
	return name
}

// nonNil keeps an empty upload distinct from a missing one.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// errBodyTimeout is the error of a request body read past Options.BodyTimeout.
var errBodyTimeout = errors.New("the request body did not arrive within this service's read deadline")

// deadliner is a body that enforces a read deadline itself (the Workers
// request stream, main_js.go).
type deadliner interface {
	SetReadDeadline(t time.Time) error
}

// withDeadline returns body with reads failing with errBodyTimeout once d has
// passed, and a stop function that closes it. The deadline is the body's own
// (the Workers request stream, main_js.go), the connection's (a native
// server), or else a goroutine reads the body into a pipe the timer closes.
func withDeadline(w http.ResponseWriter, body io.ReadCloser, d time.Duration) (io.Reader, func()) {
	timeoutErr := fmt.Errorf("%w (%v): send the whole body at once", errBodyTimeout, d)
	closeBody := func() { body.Close() }
	if dl, ok := body.(deadliner); ok && dl.SetReadDeadline(time.Now().Add(d)) == nil {
		return &timeoutReader{r: body, err: timeoutErr}, closeBody
	}
	if http.NewResponseController(w).SetReadDeadline(time.Now().Add(d)) == nil {
		// The server closes the body, within the deadline (it resets the
		// deadline for the connection's next request).
		return &timeoutReader{r: body, err: timeoutErr}, func() {}
	}
	pr, pw := io.Pipe()
	go func() {
		_, err := io.Copy(pw, body)
		pw.CloseWithError(err) // nil: EOF
	}()
	t := time.AfterFunc(d, func() { pw.CloseWithError(timeoutErr) })
	return pr, func() {
		// Not body.Close: it may wait for the goroutine's stalled read.
		t.Stop()
		pr.Close()
	}
}

// timeoutReader names the deadline in a timeout error.
type timeoutReader struct {
	r   io.Reader
	err error
}

func (t *timeoutReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if err != nil && (errors.Is(err, errBodyTimeout) || errors.Is(err, os.ErrDeadlineExceeded)) {
		err = t.err
	}
	return n, err
}
