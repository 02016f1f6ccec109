package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	neturl "net/url"
	"path"
	"time"

	"github.com/dynosim/dynosim-web/core/recommend"
	"github.com/dynosim/dynosim-web/core/report"
	"github.com/dynosim/dynosim-web/core/sim"
	"gopkg.in/yaml.v3"
)

// remote evaluates candidates on DynoSim Workers: each trial is one POST
// /v1/predict with the base config, the trace and the candidate's sets, so
// a deployed Worker spreads a sweep over its machines, and several Worker
// URLs (--remote repeated or comma-separated) spread it over theirs. The
// Search bounds the concurrency (--parallel) and orders the ledger by
// candidate, never by which URL answered first; the answers being byte for
// byte the local reports, the ledger is the local one.
//
// What a service does is bounded, since a URL may be anything: a trial
// ends at its deadline (--remote-timeout, every attempt included), an
// answer is read up to maxRemoteAnswer bytes, and a service that cannot be
// reached or does not answer like a DynoSim Worker is
// recommend.Unavailable, which ends the search with that error (exit 2)
// instead of a ledger of failed candidates. A trial whose post fails
// (dropped connection, a proxy's 503) is posted again on another URL when
// there is one (remote_pool.go).
type remote struct {
	pool       *endpoints // the Workers' .../v1/predict URLs
	configName string
	config     []byte
	trace      []byte
	traceName  string
	client     *http.Client
	timeout    time.Duration // one trial, every attempt and wait included
	maxAnswer  int64         // bytes of a report answer read at most
}

// defaultRemoteTimeout is --remote-timeout's default: a trial on a Worker
// runs at most its CPU limit, which Cloudflare caps at 5 minutes
// (limits.cpu_ms ≤ 300000, build/wrangler.jsonc), plus a minute for the
// upload and the queue.
const defaultRemoteTimeout = 6 * time.Minute

// maxRemoteAnswer bounds a report read from the Worker: a report is a few
// hundred KB (its time series are bucketed and the planner section is
// bounded), so 64 MiB is no report but a service streaming without end.
const maxRemoteAnswer = 64 << 20

// maxRemoteRefusal bounds the body of an answer other than 200 (an error
// message, of which 200 characters are shown).
const maxRemoteRefusal = 64 << 10

// newRemote evaluates on the Workers at urls (each an http(s) base URL;
// /v1/predict is added).
func newRemote(urls []string, configName string, config []byte, in sim.Inputs, parallel int, timeout time.Duration) (*remote, error) {
	pool, err := newEndpoints(urls)
	if err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = parallel
	r := &remote{pool: pool, configName: configName, config: config,
		client: &http.Client{Transport: tr}, timeout: timeout, maxAnswer: maxRemoteAnswer}
	// The Worker has no file system: the trace goes with every trial.
	var c struct {
		Traffic struct {
			Source struct {
				Type  string   `yaml:"type"`
				Paths []string `yaml:"paths"`
			} `yaml:"source"`
		} `yaml:"traffic"`
	}
	if err := yaml.Unmarshal(config, &c); err != nil {
		return nil, err
	}
	switch ps := c.Traffic.Source.Paths; {
	case in.Trace != nil: // --trace
		r.trace, r.traceName = in.Trace, in.TraceName
	case c.Traffic.Source.Type == "synthetic" || len(ps) == 0:
	case len(ps) > 1:
		return nil, usageError{errors.New("--remote: the Worker takes one trace; merge traffic.source.paths into one file")}
	default:
		if r.trace, err = in.ReadFile(ps[0]); err != nil {
			return nil, fmt.Errorf("traffic.source.paths[0]: %w", err)
		}
		r.traceName = path.Base(ps[0])
	}
	return r, nil
}

// Predict implements recommend.Evaluator.
func (r *remote) Predict(sets []string) (*report.Report, string, error) {
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, _ := mw.CreateFormFile("config", r.configName)
	fw.Write(r.config)
	if r.trace != nil {
		fw, _ = mw.CreateFormFile("trace", r.traceName)
		fw.Write(r.trace)
	}
	for _, s := range sets {
		mw.WriteField("set", s)
	}
	mw.Close()
	b, header, code, url, err := r.post(body.Bytes(), mw.FormDataContentType())
	unavailable := func(err error) error {
		return &recommend.Unavailable{Err: fmt.Errorf("--remote %s: %w", url, err)}
	}
	switch {
	case err != nil:
		return nil, recommend.ReasonRuntime, unavailable(err)
	case code == http.StatusNotFound || code == http.StatusMethodNotAllowed:
		// The Worker answers these only off its endpoints.
		return nil, recommend.ReasonRuntime, unavailable(fmt.Errorf("HTTP %d (%.200s): not a DynoSim Worker's /v1/predict", code, b))
	case code != http.StatusOK:
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(b, &e) != nil || e.Error == "" {
			e.Error = fmt.Sprintf("HTTP %d: %.200s", code, b)
		}
		cat := header.Get("X-Dynosim-Reason")
		if cat == "" {
			cat = recommend.ReasonRuntime
		}
		return nil, cat, errors.New(e.Error)
	}
	var rep report.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, recommend.ReasonRuntime, unavailable(fmt.Errorf("the answer is not a DynoSim report: %w", err))
	}
	return &rep, "", nil
}

// remoteAttempts bounds how often one trial is posted to one URL; with
// several URLs a trial is posted at most remoteAttempts + URLs − 1 times
// (endpoints.attempts), every URL at least once. A trial is a pure
// function of what is posted and the Worker keeps nothing between
// requests, so posting it again is safe; a busy Worker or a keep-alive
// connection closed under the client (connection reset, "server closed
// idle connection") otherwise turned one transient fault into a failed
// candidate and a ledger that differed from the local one.
const remoteAttempts = 3

// remoteBackoff is the wait before the second attempt (k × it before
// attempt k+1); a variable so tests need not wait.
var remoteBackoff = time.Second

// transientStatus are the answers of a proxy or an overloaded service
// (Cloudflare's edge among them), not the Worker's verdict on the trial:
// posted again like a dropped connection.
func transientStatus(code int) bool {
	switch code {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// errAnswerTooLarge is a 200 answer past maxAnswer: never posted again.
var errAnswerTooLarge = errors.New("answer too large")

// post sends one trial, again after a transport error or a transient
// status (never after another HTTP answer, which is the Worker's
// verdict), all within the trial's deadline, and returns the answer's
// body, headers and status, and the URL that answered (or failed last).
// Each attempt goes to the URL the pool picks: one this trial has not
// tried while there is one, so a retry lands on another Worker; only a
// URL tried already is waited for (k × remoteBackoff before attempt k+1).
func (r *remote) post(body []byte, contentType string) ([]byte, http.Header, int, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	defer cancel()
	var err error
	attempts, url := 0, ""
	tried := make([]bool, r.pool.len())
	for attempts < r.pool.attempts() && ctx.Err() == nil {
		e := r.pool.pick(tried)
		url = r.pool.url(e)
		if tried[e] {
			select {
			case <-ctx.Done():
				r.pool.done(e, unjudged)
				continue
			case <-time.After(time.Duration(attempts) * remoteBackoff):
			}
		}
		tried[e] = true
		attempts++
		var b []byte
		var header http.Header
		var code int
		b, header, code, err = r.attempt(ctx, url, body, contentType)
		switch {
		case err == nil && transientStatus(code):
			err = fmt.Errorf("HTTP %d: %.200s", code, b)
		case err == nil:
			r.pool.done(e, answered)
			return b, header, code, url, nil
		case errors.Is(err, errAnswerTooLarge):
			r.pool.done(e, failed)
			return nil, nil, 0, url, fmt.Errorf("the answer is over %d MiB, which no DynoSim report is: not a DynoSim Worker's /v1/predict", r.maxAnswer>>20)
		}
		if ctx.Err() != nil { // the trial's deadline, not the URL's fault
			r.pool.done(e, unjudged)
		} else {
			r.pool.done(e, failed)
		}
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		what := "1 attempt"
		if attempts != 1 {
			what = fmt.Sprintf("%d attempts", attempts)
		}
		return nil, nil, 0, url, fmt.Errorf("no answer within %v (--remote-timeout; %s)", r.timeout, what)
	}
	var ue *neturl.Error
	if errors.As(err, &ue) {
		err = ue.Err // its text repeats the method and URL
	}
	return nil, nil, 0, url, fmt.Errorf("%d attempts: %w", attempts, err)
}

// attempt posts the trial once and reads the answer: at most maxAnswer
// bytes of a 200, maxRemoteRefusal of anything else (cut there).
func (r *remote) attempt(ctx context.Context, url string, body []byte, contentType string) ([]byte, http.Header, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, nil, 0, err
	}
	req.Header.Set("Content-Type", contentType)
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, nil, 0, err
	}
	defer resp.Body.Close()
	limit := int64(maxRemoteRefusal)
	if resp.StatusCode == http.StatusOK {
		limit = r.maxAnswer
		if resp.ContentLength > limit {
			return nil, nil, 0, errAnswerTooLarge
		}
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, nil, 0, err
	}
	if int64(len(b)) > limit {
		if resp.StatusCode == http.StatusOK {
			return nil, nil, 0, errAnswerTooLarge
		}
		b = b[:limit]
	}
	return b, resp.Header, resp.StatusCode, nil
}
