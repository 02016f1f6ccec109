package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/dynosim/dynosim-web/cmd/dynosim/live"
	"github.com/dynosim/dynosim-web/core/sim"
)

// runLive implements `dynosim live`: one simulated deployment behind an
// OpenAI-compatible endpoint, stepped on the wall clock (docs/live.md). It
// serves until SIGTERM or SIGINT, then lets open streams finish.
func runLive(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("live", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		cfgPath    = fs.String("c", "", "config `FILE` (YAML, any config predict takes); default: the embedded default")
		addr       = fs.String("addr", "127.0.0.1:8000", "listen `ADDRESS` (host:port; port 0 picks a free one)")
		speedup    = fs.Float64("speedup", 1, "simulated seconds per wall second (10: ten times faster than the deployment)")
		model      = fs.String("served-model-name", "", "model `NAME` clients ask for (default: the config's engine.model)")
		maxWaiting = fs.Int("max-waiting", live.DefaultMaxWaiting, "requests waiting for an engine before new ones get 429 with Retry-After")
		zmq        = fs.String("kv-events-endpoint", "", "publish KV events over ZMQ PUB at `URL` in vLLM's format, e.g. tcp://127.0.0.1:5557 (default: off; SSE /v1/kv_events is always on)")
		replay     = fs.String("kv-events-replay-endpoint", "", "serve KV-event replay over ZMQ ROUTER at `URL`, e.g. tcp://127.0.0.1:5558")
		positional = fs.Bool("kv-events-positional", false, "encode KV events as vLLM's positional arrays, not named maps")
		grace      = fs.Duration("shutdown-grace", 30*time.Second, "on SIGTERM, how long open streams may run before they are cut")
		readTO     = fs.Duration("read-timeout", live.DefaultReadTimeout, "how long a client may take to send a request's headers, and again its body (then 408 or the connection is closed)")
		idleTO     = fs.Duration("idle-timeout", live.DefaultIdleTimeout, "close a keep-alive connection idle this long")
		maxConns   = fs.Int("max-connections", 0, "open connections at most; at the cap the longest-idle one is closed for a new one, else new ones wait (0: the open-file limit less 64, at most 10000)")
		inflight   = fs.Int64("max-inflight-bytes", live.DefaultMaxInflightBytes, "request body `BYTES` being read, tokenized or waiting for an engine before new requests get 429 with Retry-After (at least 8388608, the largest body)")
		portBase   = fs.Int("per-worker-ports", 0, "also serve worker i of the first pool on port `BASE`+i, requests going straight to it past the simulated router, for an external router or gateway (0: off; BASE in 1024..65535-workers)")
		fpmPort    = fs.Int("fpm-port", 0, "publish forward-pass metrics (Dynamo's ForwardPassMetrics: per pass, scheduled and queued prefill and decode work) over ZMQ PUB, engine rank i on port `BASE`+i of --addr's host, as DYN_FORWARDPASS_METRIC_PORT (0: off; Dynamo's default base is 20380)")
		sets       multiFlag
	)
	if err := parseConfigFlags(fs, args, cfgPath, &sets); err != nil {
		return err
	}
	switch {
	case *readTO <= 0:
		return usageError{fmt.Errorf("--read-timeout: must be > 0, got %v", *readTO)}
	case *idleTO <= 0:
		return usageError{fmt.Errorf("--idle-timeout: must be > 0, got %v", *idleTO)}
	case *maxConns < 0:
		return usageError{fmt.Errorf("--max-connections: must be ≥ 0 (0: from the open-file limit), got %d", *maxConns)}
	}
	if *replay != "" && *zmq == "" {
		return usageError{errors.New("--kv-events-replay-endpoint needs --kv-events-endpoint")}
	}
	in := sim.Inputs{Sets: sets}
	if err := loadConfig(&in, *cfgPath); err != nil {
		return err
	}
	fpmHost, _, _ := net.SplitHostPort(*addr)
	if fpmHost == "" {
		fpmHost = "0.0.0.0" // --addr :PORT listens on every interface
	}
	srv, err := live.New(live.Options{FPMPortBase: *fpmPort, FPMHost: fpmHost, Inputs: in, Speedup: *speedup, Model: *model, MaxWaiting: *maxWaiting,
		ZMQ: *zmq, ZMQReplay: *replay, Positional: *positional, MaxInflightBytes: *inflight,
		ReadTimeout: *readTO, IdleTimeout: *idleTO, MaxConnections: *maxConns, WorkerPortBase: *portBase})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		srv.Close()
		return fmt.Errorf("live: %w", err)
	}
	host, port, _ := net.SplitHostPort(ln.Addr().String())
	mainPort, _ := strconv.Atoi(port)
	if err := srv.ListenWorkers(host, mainPort); err != nil {
		ln.Close()
		srv.Close()
		return usageError{err}
	}
	fmt.Fprintf(stderr, "dynosim: live: serving %s on http://%s/v1\n", srv.Info, ln.Addr())
	for i, a := range srv.WorkerAddrs() {
		fmt.Fprintf(stderr, "dynosim: live: worker %d on http://%s/v1\n", i, a)
	}
	if *zmq != "" {
		fmt.Fprintf(stderr, "dynosim: live: KV events on %s (topic kv@worker-<i>@%s)\n", *zmq, srv.Model())
	}
	if a := srv.FPMAddrs(); len(a) > 0 {
		fmt.Fprintf(stderr, "dynosim: live: forward-pass metrics on %s..%s (one PUB per engine rank)\n", a[0], a[len(a)-1])
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	err = srv.Serve(ctx, ln, *grace)
	fmt.Fprintln(stderr, "dynosim: live: stopped")
	return err
}
