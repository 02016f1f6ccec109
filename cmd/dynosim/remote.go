package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/dynosim/dynosim-web/core/recommend"
	"github.com/dynosim/dynosim-web/core/report"
	"github.com/dynosim/dynosim-web/core/sim"
	"gopkg.in/yaml.v3"
)

// remote evaluates candidates on the DynoSim Worker: each trial is one
// POST /v1/predict with the base config, the trace and the candidate's
// sets, so a deployed Worker spreads a sweep over its machines. The Search
// bounds the concurrency (--parallel); the ledger is the local one, the
// answers being byte for byte the local reports.
type remote struct {
	url        string // .../v1/predict
	configName string
	config     []byte
	trace      []byte
	traceName  string
	client     *http.Client
}

func newRemote(base, configName string, config []byte, in sim.Inputs, parallel int) (*remote, error) {
	u, err := url.Parse(strings.TrimRight(base, "/"))
	if err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, usageError{fmt.Errorf("--remote: want an http(s) URL of a DynoSim Worker, got %q", base)}
	}
	r := &remote{url: u.String() + "/v1/predict", configName: configName, config: config,
		client: &http.Client{Timeout: 10 * time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: parallel}}}
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
	b, header, code, err := r.post(body.Bytes(), mw.FormDataContentType())
	if err != nil {
		return nil, recommend.ReasonRuntime, fmt.Errorf("--remote: %w", err)
	}
	if code != http.StatusOK {
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
		return nil, recommend.ReasonRuntime, fmt.Errorf("--remote: the Worker's report: %w", err)
	}
	return &rep, "", nil
}

// remoteAttempts bounds how often one trial is posted. A trial is a pure
// function of what is posted and the Worker keeps nothing between
// requests, so posting it again is safe; a busy Worker or a keep-alive
// connection closed under the client (connection reset, "server closed
// idle connection") otherwise turned one transient fault into a failed
// candidate and a ledger that differed from the local one.
const remoteAttempts = 3

// post sends one trial, again after a transport error (never after an
// HTTP answer, which is the Worker's verdict), and returns the answer's
// body, headers and status.
func (r *remote) post(body []byte, contentType string) ([]byte, http.Header, int, error) {
	var err error
	for attempt := range remoteAttempts {
		if attempt > 0 {
			time.Sleep(time.Duration(attempt) * time.Second)
		}
		var req *http.Request
		if req, err = http.NewRequest(http.MethodPost, r.url, bytes.NewReader(body)); err != nil {
			return nil, nil, 0, err // a bad URL does not heal
		}
		req.Header.Set("Content-Type", contentType)
		var resp *http.Response
		if resp, err = r.client.Do(req); err != nil {
			continue
		}
		b, rerr := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
		resp.Body.Close()
		if err = rerr; err == nil {
			return b, resp.Header, resp.StatusCode, nil
		}
	}
	return nil, nil, 0, fmt.Errorf("%d attempts: %w", remoteAttempts, err)
}
