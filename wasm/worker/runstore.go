package main

import (
	"fmt"
	"net/http"
)

// The run store's side of POST /v1/predict: a report is stored under its
// run id, and only a stored run is handed out as a URL.

// storeRun stores report b under run id and says how it went (the
// X-Dynosim-Cache value) and whether it is stored: only a stored run gets
// a run URL (issue 29 item 11: a report too large for KV was answered
// with a Location that then 404ed).
func (h *Handler) storeRun(id string, b []byte) (cache string, stored bool) {
	switch {
	case h.store == nil:
		return "miss; not stored", false
	case len(b) > h.opt.MaxStoredBytes:
		return fmt.Sprintf("miss; not stored: the report's %d bytes are over the run store's limit of %d", len(b), h.opt.MaxStoredBytes), false
	}
	if err := h.store.Put(runKeyPrefix+id, b); err != nil {
		return "miss; not stored: " + oneLine(err.Error()), false
	}
	return "miss", true
}

// writeReport answers report b of run id; the run URL (Location) and id go
// out only when the run is stored, so GET /v1/runs/{id} serves it.
func writeReport(w http.ResponseWriter, status int, id, cache string, stored bool, b []byte) {
	hd := w.Header()
	hd.Set("Content-Type", "application/json")
	if stored {
		hd.Set("Location", "/v1/runs/"+id)
		hd.Set("X-Dynosim-Run-Id", id)
	}
	hd.Set("X-Dynosim-Cache", cache)
	if hd.Get("Cache-Control") == "" {
		// A POST answer is never cached; GET /v1/runs/{id} is immutable.
		hd.Set("Cache-Control", "no-store")
	}
	writeBody(w, status, b)
}

// getRun answers GET /v1/runs/{id}: the stored report, or for a browser
// navigating to it, when a page is configured, a 303 to the rendered run.
func (h *Handler) getRun(w http.ResponseWriter, r *http.Request, id string) {
	if !validRunID(id) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("unknown run id %q (ids are %d hex digits)", oneLine(id), runIDLen))
		return
	}
	if h.store == nil {
		writeError(w, http.StatusNotFound, "unknown run id "+id+" (this service stores no runs)")
		return
	}
	b, ok, err := h.store.Get(runKeyPrefix + id)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "storage unavailable: "+oneLine(err.Error()))
		return
	}
	if !ok {
		writeError(w, http.StatusNotFound, "unknown run id "+id)
		return
	}
	// An id names one set of inputs and one build: its report never changes.
	w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	w.Header().Set("Vary", "Accept")
	h.setShareHeader(w, id)
	if u := h.shareURL(id); u != "" && wantsHTML(r) {
		// A person opened the run link: show the rendered run, not JSON.
		w.Header().Set("Location", u)
		w.WriteHeader(http.StatusSeeOther)
		return
	}
	writeReport(w, http.StatusOK, id, "hit", true, b)
}
