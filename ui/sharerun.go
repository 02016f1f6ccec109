package main

import (
	"net/url"
	"time"

	"github.com/vugu/vugu/js"
)

// This file: a run on the shared service shared as the rendered page
// (issue 32 item 9). The share link is this page with ?run=<id>; opened, the
// page fetches the stored report and the config it ran with from the
// service (dynosim.fetchRun) and shows them as it shows a service run.

// validRunID reports whether id is a run id of the service: 32 lower-case
// hex digits (wasm/worker runID).
func validRunID(id string) bool {
	if len(id) != 32 {
		return false
	}
	for _, c := range id {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// runPageLink is the share link of run id: the page at href with ?run=<id>,
// its other query parameters (service=, embed=) kept so the link loads the
// run from the same service, the fragment (the config) dropped. "" when
// href is not an http(s) URL or id is not a run id.
func runPageLink(href, id string) string {
	u, err := url.Parse(href)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || !validRunID(id) {
		return ""
	}
	q := u.Query()
	q.Set("run", id)
	u.RawQuery, u.Fragment, u.RawFragment, u.User = q.Encode(), "", "", nil
	if s := u.String(); len(s) <= maxRunURL {
		return s
	}
	return ""
}

// runQuery is the ?run= value of a page URL's query string.
func runQuery(search string) string {
	v, err := url.ParseQuery(trimQ(search))
	if err != nil {
		return ""
	}
	return v.Get("run")
}

func trimQ(s string) string {
	if len(s) > 0 && s[0] == '?' {
		return s[1:]
	}
	return s
}

// sharedNote is the line above a loaded run's results.
func sharedNote(id, service, configName, traceName string) string {
	s := "Run " + id + " on " + serviceHost(service)
	switch {
	case configName != "" && traceName != "":
		s += ": " + configName + " (in the editor) on " + traceName
	case configName != "":
		s += ": " + configName + " (in the editor)"
	default:
		s += " (the service kept no config for it)"
	}
	return s + "."
}

// RunPageLink is the share link of the shown run ("" unless it ran on, or
// was loaded from, the shared service).
func (c *Root) RunPageLink() string {
	if r := c.current(); r != nil {
		return r.PageURL
	}
	return ""
}

// SharedNote says which stored run the shown results are ("Run <id> on
// <host>…"), "" when they are not a loaded one.
func (c *Root) SharedNote() string {
	if r := c.current(); r != nil {
		return r.Shared
	}
	return ""
}

// pageLinkOf is the share link of a service run's result res.
func pageLinkOf(res js.Value) string {
	loc := js.Global().Get("location")
	if !loc.Truthy() || jsString(res.Get("runURL")) == "" {
		return ""
	}
	return runPageLink(jsString(loc.Get("href")), jsString(res.Get("runId")))
}

// loadSharedRun starts loading the run the page was opened with (?run=<id>):
// its results replace the empty page, its config the editor's; a failure is
// shown in the error box and the page stays as it was.
func (c *Root) loadSharedRun(search string) {
	id := runQuery(search)
	if id == "" || !dynosim().Truthy() || dynosim().Get("fetchRun").Type() != js.TypeFunction {
		return
	}
	c.Running, c.Percent, c.started, c.Elapsed = true, 0, time.Now(), "0.0 s"
	c.RunCount++
	run := c.RunCount
	c.Status = "Loading run " + clip(id, 80) + " from the shared service…"
	c.then(dynosim().Call("fetchRun", id), func(res js.Value) {
		if run != c.RunCount {
			return
		}
		svc := jsString(res.Get("service"))
		configName, traceName := "", ""
		if in := res.Get("inputs"); in.Truthy() {
			c.Config, c.Preset = jsString(in.Get("config")), ""
			configName, traceName = jsString(in.Get("config_name")), jsString(in.Get("trace_name"))
			c.scheduleValidate(0)
		}
		opts := js.Global().Get("Object").New()
		opts.Set("config", c.Config)
		c.finish(res, c.inputKey(), c.Config, c.TraceLabel(), opts)
		if r := c.current(); r != nil && !c.failed && r.JSON == jsString(res.Get("json")) {
			r.Shared = sharedNote(id, svc, configName, traceName)
			c.Status = "Loaded from the shared service: " + ranWhat(r.Parsed) + " —"
		}
	}, func(msg string) {
		if run != c.RunCount {
			return
		}
		c.stop()
		if msg == "canceled" {
			c.Status = "Canceled."
			return
		}
		c.Error, c.Status = msg, "Could not load run "+clip(id, 80)+"."
	})
}
