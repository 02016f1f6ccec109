package live

import (
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/dynosim/dynosim-web/cmd/dynosim/live/fpm"
)

// Forward-pass metrics (issue 31 item 3): with Options.FPMPortBase set,
// every engine rank publishes Dynamo's ForwardPassMetrics on a PUB socket
// of its own, rank i (counted over the workers in order) at port BASE+i.
// Upstream's InstrumentedScheduler binds one socket per data-parallel rank
// at DYN_FORWARDPASS_METRIC_PORT+dp_rank (default 20380, publishing only
// when the variable is set): one process here runs many engines, so the
// ranks of later workers follow those of earlier ones.

// fpmRanks are the ranks that publish, worker by worker, with the index
// of each worker's rank 0.
func (s *Server) fpmRanks() (ranks []fpm.Rank, base []int) {
	for w := range s.d.live.Workers() {
		base = append(base, len(ranks))
		for r := range s.d.live.Worker(w).Ranks {
			ranks = append(ranks, fpm.Rank{WorkerID: strconv.Itoa(w), DPRank: r})
		}
	}
	return ranks, base
}

// listenFPM binds the forward-pass-metric sockets, refusing a base out of
// 1024..65535−ranks+1.
func (s *Server) listenFPM() error {
	b := s.opt.FPMPortBase
	if b == 0 {
		return nil
	}
	ranks, base := s.fpmRanks()
	n := len(ranks)
	if b < 1024 || b > maxPort-n+1 {
		return fmt.Errorf("--fpm-port: BASE must be in 1024..%d for %d ranks (ports BASE..BASE+%d), got %d", maxPort-n+1, n, n-1, b)
	}
	host := s.opt.FPMHost
	if host == "" {
		host = "127.0.0.1"
	}
	eps := make([]string, n)
	for i := range n {
		eps[i] = "tcp://" + net.JoinHostPort(host, strconv.Itoa(b+i))
	}
	p, err := fpm.Listen(eps, ranks, time.Now())
	if err != nil {
		return fmt.Errorf("--fpm-port: %w", err)
	}
	s.d.fpm, s.d.fpmBase = p, base
	return nil
}

// FPMAddrs are the forward-pass-metric endpoints, rank by rank (nil: off).
func (s *Server) FPMAddrs() []string {
	if s.d.fpm == nil {
		return nil
	}
	return s.d.fpm.Addrs()
}
