package main

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strings"
)

// Share links (issue 32 item 9): a stored run opens as the rendered page,
// <page>/?run=<id>, which fetches the report (GET /v1/runs/{id}) and the
// inputs it ran with (GET /v1/runs/{id}/inputs) and shows them as a local
// run. The JSON route stays for API clients; a browser that navigates to it
// (Accept: text/html first) is sent to the page when the Worker knows it.

const inputsKeyPrefix = "in:"

// storedInputs are the inputs of a stored run other than the files'
// bytes: the config text the page puts back in its editor, and the names
// the page's note shows. Traces and profiles are not kept (they may be
// 32 MiB; the report is what the page renders).
type storedInputs struct {
	Config      string   `json:"config"`
	ConfigName  string   `json:"config_name"`
	TraceName   string   `json:"trace_name,omitempty"`
	ProfileName string   `json:"profile_name,omitempty"`
	ModelName   string   `json:"model_name,omitempty"`
	Sets        []string `json:"sets,omitempty"`
	Timeline    uint64   `json:"timeline,omitempty"`
}

// pageURL checks Options.PageURL: an absolute http(s) URL (its query is
// kept, so PAGE_URL may carry ?service=...; the fragment is dropped), else "".
func pageURL(raw string) string {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return ""
	}
	u.Fragment, u.RawFragment = "", ""
	if u.Path == "" {
		u.Path = "/"
	}
	return u.String()
}

// shareURL is the page link of run id, "" when no page is configured.
func (h *Handler) shareURL(id string) string {
	if h.opt.PageURL == "" {
		return ""
	}
	u, err := url.Parse(h.opt.PageURL)
	if err != nil {
		return ""
	}
	q := u.Query()
	q.Set("run", id)
	u.RawQuery = q.Encode()
	return u.String()
}

// storeInputs keeps the inputs of a stored run beside its report. A failed
// write only costs the page its config: the run is still served.
func (h *Handler) storeInputs(id string, in *inputs) {
	if h.store == nil {
		return
	}
	if _, ok, err := h.store.Get(inputsKeyPrefix + id); err != nil || ok {
		return
	}
	b, err := json.Marshal(storedInputs{
		Config: string(in.config), ConfigName: in.configName,
		TraceName: nameIf(in.hasTrace, in.traceName), ProfileName: nameIf(in.hasProfile, in.profileName),
		ModelName: nameIf(in.hasModel, in.modelName), Sets: in.sets, Timeline: in.watch,
	})
	if err == nil {
		h.store.Put(inputsKeyPrefix+id, append(b, '\n'))
	}
}

func nameIf(has bool, name string) string {
	if !has {
		return ""
	}
	return name
}

// getInputs answers GET /v1/runs/{id}/inputs.
func (h *Handler) getInputs(w http.ResponseWriter, id string) {
	if !validRunID(id) || h.store == nil {
		writeError(w, http.StatusNotFound, fmt.Sprintf("unknown run id %q", oneLine(id)))
		return
	}
	b, ok, err := h.store.Get(inputsKeyPrefix + id)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "storage unavailable: "+oneLine(err.Error()))
		return
	}
	if !ok {
		writeError(w, http.StatusNotFound, "no inputs stored for run id "+id+" (unknown, or stored before inputs were kept)")
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", "application/json")
	hd.Set("Cache-Control", "public, max-age=31536000, immutable")
	writeBody(w, http.StatusOK, b)
}

// wantsHTML reports whether a request's Accept header puts text/html first,
// as a browser's navigation does; fetch() and curl send */* and get JSON.
func wantsHTML(r *http.Request) bool {
	first, _, _ := strings.Cut(r.Header.Get("Accept"), ",")
	mt, _, err := mime.ParseMediaType(strings.TrimSpace(first))
	return err == nil && mt == "text/html"
}

// setShareHeader names the page link of a stored run in the answer.
func (h *Handler) setShareHeader(w http.ResponseWriter, id string) {
	if u := h.shareURL(id); u != "" {
		w.Header().Set("X-Dynosim-Share-URL", u)
	}
}
