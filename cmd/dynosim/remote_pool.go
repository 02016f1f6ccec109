package main

import (
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"
)

// endpoints are the Worker URLs of `recommend --remote` (issue 34 item 4):
// the flag is repeatable and each value may list URLs separated by commas,
// so the old single-URL form is one of its cases. A trial goes to the URL
// with the fewest trials in flight among those that have not failed last
// (ties to the next in turn, so trials spread evenly); a failed post is
// retried on a URL the trial has not tried yet. Which URL ran a trial
// never changes its report (every Worker runs the same core on the same
// inputs), so the ledger is the local one whatever the spread.
type endpoints struct {
	mu   sync.Mutex
	eps  []endpoint
	turn int // where the next tie-break starts
}

type endpoint struct {
	url  string    // .../v1/predict
	busy int       // trials posted and not yet answered
	bad  int       // consecutive failed posts (0 after an answer)
	cool time.Time // while before it, a URL that failed is picked last
}

// maxCoolDown bounds how long a failed URL waits for its next trial.
const maxCoolDown = 30 * time.Second

// outcome is what a post told of its URL.
type outcome int

const (
	answered outcome = iota // the URL answered (any verdict)
	failed                  // no answer, a proxy's transient status, or no Worker
	unjudged                // the trial's deadline passed: the URL is not to blame
)

// parseRemote splits the --remote values (repeated flags, commas) into
// URLs, each an http(s) URL with a host, given once; errors name the
// flag and the bad URL.
func parseRemote(values []string) ([]string, error) {
	var urls []string
	seen := map[string]bool{}
	for _, v := range values {
		for _, s := range strings.Split(v, ",") {
			s = strings.TrimSpace(s)
			u, err := url.Parse(strings.TrimRight(s, "/"))
			if err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
				return nil, usageError{fmt.Errorf("--remote: want an http(s) URL of a DynoSim Worker, got %q", s)}
			}
			if seen[u.String()] {
				return nil, usageError{fmt.Errorf("--remote: %q is given twice (a retry goes to another URL)", s)}
			}
			seen[u.String()] = true
			urls = append(urls, u.String())
		}
	}
	return urls, nil
}

func newEndpoints(values []string) (*endpoints, error) {
	urls, err := parseRemote(values)
	if err != nil {
		return nil, err
	}
	if len(urls) == 0 {
		return nil, usageError{fmt.Errorf("--remote: no URL given")}
	}
	p := &endpoints{}
	for _, u := range urls {
		p.eps = append(p.eps, endpoint{url: u + "/v1/predict"})
	}
	return p, nil
}

func (p *endpoints) len() int { return len(p.eps) }

// attempts bounds one trial's posts: remoteAttempts on one URL, and one
// more per further URL, so every URL is tried once before any twice.
func (p *endpoints) attempts() int { return remoteAttempts + len(p.eps) - 1 }

func (p *endpoints) url(e int) string { return p.eps[e].url }

// pick chooses the URL of a trial's next post (tried: the URLs this trial
// posted to already) and counts it busy until done.
func (p *endpoints) pick(tried []bool) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	best := -1
	better := func(i, j int) bool { // is i a better choice than j?
		a, b := &p.eps[i], &p.eps[j]
		if tried[i] != tried[j] {
			return !tried[i]
		}
		if ca, cb := now.Before(a.cool), now.Before(b.cool); ca != cb {
			return !ca
		}
		if a.busy != b.busy {
			return a.busy < b.busy
		}
		return a.bad < b.bad
	}
	for k := range p.eps {
		i := (p.turn + k) % len(p.eps)
		if best < 0 || better(i, best) {
			best = i
		}
	}
	p.turn = (best + 1) % len(p.eps)
	p.eps[best].busy++
	return best
}

// done ends a post to URL e.
func (p *endpoints) done(e int, o outcome) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.eps[e].busy--
	switch o {
	case answered:
		p.eps[e].bad = 0
	case failed:
		p.eps[e].bad++
		p.eps[e].cool = time.Now().Add(min(time.Duration(p.eps[e].bad)*remoteBackoff, maxCoolDown))
	}
}
