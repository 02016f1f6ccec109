package live

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/dynosim/dynosim-web/cmd/dynosim/live/kvevents"
	"github.com/dynosim/dynosim-web/cmd/dynosim/live/metrics"
	"github.com/dynosim/dynosim-web/core/sim"
)

// Options configure a live server.
type Options struct {
	Inputs  sim.Inputs // the deployment: any config predict takes, without a planner
	Speedup float64    // simulated seconds per wall second (0: 1)
	// Model is the served model name (""/default: the config's engine.model).
	Model string
	// MaxWaiting bounds the requests accepted and not yet admitted by an
	// engine; past it a request gets 429 with Retry-After (0: 1000, as
	// llm-d-inference-sim's max-waiting-queue-length).
	MaxWaiting int
	// ZMQ and ZMQReplay are the KV-event PUB and replay (ROUTER)
	// endpoints, e.g. tcp://127.0.0.1:5557 ("": none).
	ZMQ, ZMQReplay string
	Positional     bool // KV events as positional msgpack arrays, not named maps
	// MaxInflightBytes bounds the bytes of request bodies being read,
	// tokenized or waiting for an engine; past it a request gets 429 with
	// Retry-After (0: DefaultMaxInflightBytes; at least maxBody).
	MaxInflightBytes int64
	// The connection limits Serve applies (docs/live.md): ReadTimeout
	// bounds reading a request's headers, and again its body (0:
	// DefaultReadTimeout); IdleTimeout closes a keep-alive connection idle
	// that long (0: DefaultIdleTimeout); MaxConnections caps open
	// connections (0: DefaultMaxConnections). No write timeout cuts a
	// stream: each write has its own deadline (writeTimeout).
	ReadTimeout, IdleTimeout time.Duration
	MaxConnections           int
	// WorkerPortBase: worker i of the first pool also serves on port
	// WorkerPortBase+i, routed straight to it (ports.go; 0: off).
	WorkerPortBase int
	// FPMPortBase: engine rank i (the ranks of worker 0, then worker 1's,
	// …) publishes its forward-pass metrics on a ZMQ PUB socket at
	// tcp://FPMHost:FPMPortBase+i, as Dynamo's DYN_FORWARDPASS_METRIC_PORT
	// (fpm.go; 0: off). FPMHost "" is 127.0.0.1.
	FPMPortBase int
	FPMHost     string
}

// DefaultMaxWaiting is Options.MaxWaiting's default.
const DefaultMaxWaiting = 1000

// maxBody bounds a request body: a prompt of about a million tokens.
const maxBody = 8 << 20

// Server is a live deployment behind its HTTP routes.
type Server struct {
	opt    Options
	d      *driver
	hub    *kvevents.Hub
	met    *metrics.Metrics
	mux    *http.ServeMux
	budget budget
	// active counts the completion handlers running: a shutdown lets
	// them write their streams' ends before it closes the connections.
	active  active
	stop    context.CancelFunc
	model   string
	created int64
	// Info describes the deployment, for the start-up line.
	Info      string
	workerLns []net.Listener // ListenWorkers'
}

// The bounds of --speedup. A long-running server must not reach the
// virtual clock's horizon (100 years) in wall time a deployment sees: at
// 1,000 that takes 36 days. Below a thousandth a simulated millisecond
// takes a wall second: nothing to watch.
const (
	MinSpeedup = 1e-3
	MaxSpeedup = 1e3
)

// New builds the deployment and starts its driver (and the KV-event ZMQ
// sockets, when asked); Close stops them.
func New(o Options) (*Server, error) {
	if o.Speedup == 0 {
		o.Speedup = 1
	}
	if !(o.Speedup >= MinSpeedup && o.Speedup <= MaxSpeedup) {
		return nil, fmt.Errorf("--speedup: must be between %v and %v, got %v (past %v the virtual clock reaches its 100-year horizon within five weeks of wall time)", MinSpeedup, MaxSpeedup, o.Speedup, MaxSpeedup)
	}
	if o.MaxWaiting == 0 {
		o.MaxWaiting = DefaultMaxWaiting
	}
	if o.MaxWaiting < 0 {
		return nil, fmt.Errorf("--max-waiting: must be ≥ 1, got %d", o.MaxWaiting)
	}
	if o.MaxInflightBytes == 0 {
		o.MaxInflightBytes = DefaultMaxInflightBytes
	}
	if o.ReadTimeout == 0 {
		o.ReadTimeout = DefaultReadTimeout
	}
	if o.IdleTimeout == 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.MaxConnections == 0 {
		o.MaxConnections = DefaultMaxConnections()
	}
	switch {
	case o.ReadTimeout < 0:
		return nil, fmt.Errorf("--read-timeout: must be > 0, got %v", o.ReadTimeout)
	case o.IdleTimeout < 0:
		return nil, fmt.Errorf("--idle-timeout: must be > 0, got %v", o.IdleTimeout)
	case o.MaxConnections < 0:
		return nil, fmt.Errorf("--max-connections: must be ≥ 1, got %d", o.MaxConnections)
	}
	if o.MaxInflightBytes < maxBody {
		return nil, fmt.Errorf("--max-inflight-bytes: must be ≥ %d (the largest request body), got %d", maxBody, o.MaxInflightBytes)
	}
	d := &driver{speedup: o.Speedup, cmds: make(chan command, 256), streams: map[uint64]*stream{}, done: make(chan struct{})}
	live, err := sim.NewLive(o.Inputs, d)
	if err != nil {
		return nil, err
	}
	d.live = live
	s := &Server{opt: o, d: d, model: o.Model, created: time.Now().Unix()}
	s.budget.max = o.MaxInflightBytes
	if s.model == "" {
		s.model = live.Config.Engine.Model
	}
	ec := live.Engine
	var role func(int) string // disaggregated: worker_type names each worker's pool
	if len(live.Deployment.Pools) == 2 {
		role = func(w int) string { return roleName(live.PoolRole(w)) }
	}
	s.met = metrics.NewWithRoles(ec.Policy.String(), s.model, metrics.Cache{BlockSize: ec.BlockSize, GPUBlocksPerRank: ec.NumBlocks, MaxModelLen: ec.MaxModelLen}, role)
	d.tokens = newBlockTokens(ec.BlockSize)
	s.hub = kvevents.NewHub(kvevents.Options{Model: s.model, BlockSize: ec.BlockSize, Tokens: d.tokens.tokens, Positional: o.Positional})
	s.met.MustRegister(s.hub.Collectors()...)
	d.met, d.hub = s.met, s.hub
	// Every rank starts empty: a router that indexed an earlier run of this
	// server (or of the worker it replaces) must forget it, as after a
	// restarted vLLM engine. A late subscriber replays these too.
	for w := range live.Workers() {
		for r := range live.Worker(w).Ranks {
			s.hub.PublishCleared(w, 0, r)
		}
		// Every worker's and rank's series exist from start-up, at zero
		// (issue 31 item 3): a router or autoscaler sees the whole fleet
		// before its first request.
		s.met.Init(w, len(live.Worker(w).Ranks))
	}
	ctx, stop := context.WithCancel(context.Background())
	s.stop = stop
	if o.ZMQ != "" {
		if err := s.hub.ListenZMQ(ctx, o.ZMQ, o.ZMQReplay); err != nil {
			stop()
			s.hub.Close()
			return nil, fmt.Errorf("--kv-events-endpoint: %w", err)
		}
	}
	if err := s.listenFPM(); err != nil {
		stop()
		s.hub.Close()
		return nil, err
	}
	pools := fmt.Sprintf("%d workers × %d DP ranks, %d KV blocks of %d tokens per rank", live.Workers(), live.Ranks, ec.NumBlocks, ec.BlockSize)
	if d := live.Deployment; len(d.Pools) == 2 {
		pools = fmt.Sprintf("disaggregated: %d prefill + %d decode workers", d.Pools[0].Replicas, d.Pools[1].Replicas)
	}
	s.Info = fmt.Sprintf("%s on %s (%s, %s, speedup %v)", s.model, live.Config.Engine.Hardware, ec.Policy, pools, o.Speedup)
	s.routes()
	d.t0 = time.Now()
	go d.run(ctx)
	return s, nil
}

func (s *Server) routes() {
	m := http.NewServeMux()
	m.HandleFunc("POST /v1/completions", s.complete(false))
	m.HandleFunc("POST /v1/chat/completions", s.complete(true))
	m.HandleFunc("GET /v1/models", s.models)
	m.HandleFunc("GET /health", s.health)
	m.HandleFunc("GET /health/ready", s.health)
	m.HandleFunc("POST /tokenize", s.tokenize)
	m.Handle("GET /metrics", s.met.Handler())
	m.Handle("GET /v1/kv_events", s.hub)
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fail(w, http.StatusNotFound, "NotFoundError", fmt.Sprintf("%s %s: no such route", r.Method, r.URL.Path))
	})
	s.mux = m
}

// Handler serves the routes.
func (s *Server) Handler() http.Handler { return s.mux }

// Close stops the driver (open streams end with an error) and the KV
// events.
func (s *Server) Close() error {
	s.stop()
	<-s.d.done
	err := s.hub.Close()
	if s.d.fpm != nil {
		err = errors.Join(err, s.d.fpm.Close())
	}
	return err
}

// Serve serves on ln until ctx is done, then shuts down gracefully: it
// stops accepting, lets open streams finish for up to grace, and closes.
// It applies the connection limits of the options (issue 29 item 4: with
// none, a few hundred slow or idle connections exhausted the open files
// and blocked every request).
func (s *Server) Serve(ctx context.Context, ln net.Listener, grace time.Duration) error {
	cs := newConns(s.opt.MaxConnections)
	hs := &http.Server{
		Handler: bodyDeadline(s.mux, s.opt.ReadTimeout),
		// Headers within the read timeout; the body within it again
		// (bodyDeadline). No ReadTimeout or WriteTimeout: those deadlines
		// cover the whole exchange and would cut a long stream.
		ReadHeaderTimeout: s.opt.ReadTimeout,
		IdleTimeout:       s.opt.IdleTimeout,
		ConnState:         cs.state,
	}
	// Shutdown closes idle connections at once but waits five seconds for
	// one that has sent nothing yet (Go's StateNew rule), which a client
	// pool may hold open: those are closed as the shutdown begins.
	hs.RegisterOnShutdown(cs.closeFresh)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(cs.listener(ln)) }()
	workers := s.serveWorkers(cs)
	var stopped error
	select {
	case err := <-errc:
		for _, w := range workers {
			w.Close()
		}
		s.Close()
		return err
	case <-ctx.Done():
	case <-s.d.done:
		// The simulation stopped by itself (its clock reached the horizon):
		// its streams have ended with the error; the server stops too,
		// rather than answer 503 forever.
		stopped = fmt.Errorf("live: the simulation stopped: %w", s.d.err)
	}
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	err := hs.Shutdown(sctx)
	for _, w := range workers {
		w.Shutdown(sctx)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		err = nil // streams still open end now, with an error event
	}
	s.Close()
	// Every open stream was told it ended; its handler writes an error
	// event and [DONE] (each write within writeTimeout). Closing the
	// connections at once cut a quarter to two thirds of them mid-write
	// (issue 29 item 7).
	t := time.NewTimer(writeTimeout)
	select {
	case <-s.active.idle():
	case <-t.C:
	}
	t.Stop()
	hs.Close()
	for _, w := range workers {
		w.Close()
	}
	if e := <-errc; !errors.Is(e, http.ErrServerClosed) && err == nil {
		err = e
	}
	if stopped != nil {
		return stopped
	}
	return err
}

func (s *Server) health(w http.ResponseWriter, _ *http.Request) {
	select {
	case <-s.d.done:
		fail(w, http.StatusServiceUnavailable, "ServiceUnavailableError", "the simulation stopped: "+s.d.err.Error())
	default:
		w.WriteHeader(http.StatusOK)
	}
}

func (s *Server) models(w http.ResponseWriter, _ *http.Request) {
	type model struct {
		ID          string `json:"id"`
		Object      string `json:"object"`
		Created     int64  `json:"created"`
		OwnedBy     string `json:"owned_by"`
		Root        string `json:"root"`
		MaxModelLen int    `json:"max_model_len,omitempty"`
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []model{{s.model, "model", s.created, "dynosim", s.model, s.d.live.Engine.MaxModelLen}}})
}

func (s *Server) complete(chat bool) http.HandlerFunc { return s.completeOn(chat, -1) }

// completeOn serves completions on worker pin (-1: where the router places
// them).
func (s *Server) completeOn(chat bool, pin int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.active.enter()
		defer s.active.leave()
		q, prompt, n, held, ok := s.parse(w, r, chat)
		if !ok {
			return
		}
		// The driver frees the lease once an engine admits the request;
		// the handler at the latest when it returns (the request ended, or
		// was aborted or refused).
		defer held.free()
		st := newStream(prompt, n, q.priority())
		st.held = held
		st.pin = pin
		ok, err := s.d.submit(r.Context(), st, s.opt.MaxWaiting)
		switch {
		case err != nil:
			fail(w, http.StatusServiceUnavailable, "ServiceUnavailableError", err.Error())
			return
		case !ok:
			w.Header().Set("Retry-After", "1")
			fail(w, http.StatusTooManyRequests, "RateLimitError", fmt.Sprintf("%d requests are waiting for an engine (--max-waiting); retry later", s.opt.MaxWaiting))
			return
		}
		out := &writer{s: s, w: w, rc: http.NewResponseController(w), st: st, chat: chat, stream: q.Stream,
			usage: !q.Stream || q.StreamOptions != nil && q.StreamOptions.IncludeUsage}
		out.serve(r.Context())
	}
}

// writeJSON answers v with its length, so the answer is whole as soon as
// it is flushed (busy answers before it reads the body's rest).
func writeJSON(w http.ResponseWriter, code int, v any) {
	b, _ := json.Marshal(v)
	b = append(b, '\n')
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(code)
	http.NewResponseController(w).SetWriteDeadline(time.Now().Add(writeTimeout))
	w.Write(b)
}

// fail answers an error in OpenAI's shape.
func fail(w http.ResponseWriter, code int, typ, msg string) {
	var e apiError
	e.Error.Message, e.Error.Type, e.Error.Code = msg, typ, code
	writeJSON(w, code, e)
}

// rejection explains an engine's rejection reason to a client.
func rejection(reason string) string {
	switch reason {
	case "kv_capacity":
		return "the request can never fit the simulated KV cache (prompt plus max_tokens exceed every worker's pool)"
	case "max_model_len":
		return "the prompt reaches the model's max_model_len"
	case "max_batched_tokens":
		return "the prompt is longer than max_batched_tokens and chunked prefill is off: no pass could prefill it"
	}
	return "the engine rejected the request: " + reason
}

func itoa(id uint64) string { return strconv.FormatUint(id, 10) }

// Model is the served model name.
func (s *Server) Model() string { return s.model }

// active counts running handlers; idle is closed when none runs.
type active struct {
	mu   sync.Mutex
	n    int
	done chan struct{} // closed when n reaches 0 (nil: nobody waits)
}

func (a *active) enter() {
	a.mu.Lock()
	a.n++
	a.mu.Unlock()
}

func (a *active) leave() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.n--; a.n == 0 && a.done != nil {
		close(a.done)
		a.done = nil
	}
}

// idle is closed once no handler runs.
func (a *active) idle() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	ch := make(chan struct{})
	if a.n == 0 {
		close(ch)
		return ch
	}
	if a.done == nil {
		a.done = ch
	}
	return a.done
}
