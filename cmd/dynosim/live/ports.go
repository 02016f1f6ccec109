package live

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
)

// Per-worker ports (issue 31 item 3): with Options.WorkerPortBase set,
// worker i of the first pool (every worker when aggregated, the prefill
// workers when disaggregated) also serves the OpenAI routes on port
// BASE+i, each request going straight to that worker, past the simulated
// router: an external router or gateway (llm-d's endpoint picker,
// Dynamo's frontend) chooses the worker, as it would choose a vLLM pod.
// The KV events of worker i are on topic kv@worker-<i>@<model>, and its
// Prometheus series carry worker="<i>".

// maxPort is the highest TCP port.
const maxPort = 65535

// workerPorts is how many workers get a port: the first pool's.
func (s *Server) workerPorts() int {
	if d := s.d.live.Deployment; len(d.Pools) == 2 {
		return d.Pools[0].Replicas
	}
	return s.d.live.Workers()
}

// ListenWorkers opens the per-worker listeners on host, one per worker of
// the first pool from port WorkerPortBase, refusing a base out of
// 1024..65535−workers and a range that holds mainPort (--addr's port).
// Serve serves them beside its main listener.
func (s *Server) ListenWorkers(host string, mainPort int) error {
	base, n := s.opt.WorkerPortBase, s.workerPorts()
	if base == 0 {
		return nil
	}
	if base < 1024 || base > maxPort-n+1 {
		return fmt.Errorf("--per-worker-ports: BASE must be in 1024..%d for %d workers (ports BASE..BASE+%d), got %d", maxPort-n+1, n, n-1, base)
	}
	if mainPort >= base && mainPort < base+n {
		return fmt.Errorf("--per-worker-ports: ports %d..%d hold --addr's port %d", base, base+n-1, mainPort)
	}
	for i := range n {
		ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(base+i)))
		if err != nil {
			for _, l := range s.workerLns {
				l.Close()
			}
			s.workerLns = nil
			return fmt.Errorf("--per-worker-ports: worker %d: %w", i, err)
		}
		s.workerLns = append(s.workerLns, ln)
	}
	return nil
}

// WorkerAddrs are the per-worker listeners' addresses, worker by worker.
func (s *Server) WorkerAddrs() []string {
	var out []string
	for _, l := range s.workerLns {
		out = append(out, l.Addr().String())
	}
	return out
}

// workerMux is worker w's routes: the main ones, with completions pinned
// to w.
func (s *Server) workerMux(w int) http.Handler {
	m := http.NewServeMux()
	m.HandleFunc("POST /v1/completions", s.completeOn(false, w))
	m.HandleFunc("POST /v1/chat/completions", s.completeOn(true, w))
	m.Handle("/", s.mux)
	return m
}

// serveWorkers starts an HTTP server on every per-worker listener, with
// the main server's timeouts and under its connection limit cs (one
// --max-connections for the process: the open files are its); the caller
// shuts them down.
func (s *Server) serveWorkers(cs *conns) []*http.Server {
	var out []*http.Server
	for i, ln := range s.workerLns {
		hs := &http.Server{Handler: bodyDeadline(s.workerMux(i), s.opt.ReadTimeout),
			ReadHeaderTimeout: s.opt.ReadTimeout, IdleTimeout: s.opt.IdleTimeout, ConnState: cs.state}
		hs.RegisterOnShutdown(cs.closeFresh)
		go hs.Serve(cs.listener(ln))
		out = append(out, hs)
	}
	return out
}
