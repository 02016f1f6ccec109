package main

import (
	"encoding/base64"
	"net/url"
	"strings"
)

// sampleNames are the embedded sample traces (see public/dynosim.js).
var sampleNames = []string{"default", "conversation", "synthetic"}

// shareFragment encodes the config and sample choice for the URL fragment.
// Uploaded traces are never put in it (nor sent anywhere).
func shareFragment(config, sample string) string {
	v := url.Values{}
	v.Set("config", base64.RawURLEncoding.EncodeToString([]byte(config)))
	if sample != "" {
		v.Set("sample", sample)
	}
	return "#" + v.Encode()
}

// parseFragment is the inverse of shareFragment; it also accepts the
// embed.js form (config as plain text). Unknown samples are dropped.
func parseFragment(frag string) (config, sample string) {
	v, err := url.ParseQuery(strings.TrimPrefix(frag, "#"))
	if err != nil {
		return "", ""
	}
	if c := v.Get("config"); c != "" {
		if b, err := base64.RawURLEncoding.DecodeString(c); err == nil {
			config = string(b)
		}
	}
	if c := v.Get("config_text"); c != "" && config == "" {
		config = c
	}
	for _, s := range sampleNames {
		if v.Get("sample") == s {
			sample = s
		}
	}
	return config, sample
}

// Size limits of the page's own texts.
const (
	maxConfigBytes   = 16 << 20 // a config file larger than this is refused (as the simulator does)
	maxShareFragment = 1 << 20  // Chromium drops URLs over 2 MiB; leave room for the rest
	maxShownError    = 4000     // longer error texts are cut (they may quote the input)
	maxRunURL        = 2048
)

// clip cuts s to at most n bytes (on a rune boundary), marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = strings.ToValidUTF8(s[:n], "")
	return s + "…"
}

// runLink is the shared service's Location for a run, if it is safe to show
// as a link: an absolute http(s) URL on the service's own origin. Anything
// else (a javascript: or data: URL, another host) gives "".
func runLink(loc, service string) string {
	if loc == "" || len(loc) > maxRunURL || service == "" {
		return ""
	}
	u, err := url.Parse(loc)
	s, err2 := url.Parse(service)
	if err != nil || err2 != nil || (u.Scheme != "http" && u.Scheme != "https") ||
		!strings.EqualFold(u.Scheme, s.Scheme) || !strings.EqualFold(u.Host, s.Host) || u.Host == "" || u.User != nil {
		return ""
	}
	return u.String()
}

// serviceHost is the host[:port] of a shared-service URL (or the URL itself
// if it does not parse), shown next to the "Run on the shared service" tick.
func serviceHost(service string) string {
	if u, err := url.Parse(service); err == nil && u.Host != "" {
		return u.Host
	}
	return service
}
