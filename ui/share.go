package main

import (
	"encoding/base64"
	"net/url"
	"strings"
)

// sampleNames are the embedded sample traces (see public/dynosim.js).
var sampleNames = []string{"conversation", "synthetic"}

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

// serviceHost is the host[:port] of a shared-service URL (or the URL itself
// if it does not parse), shown next to the "Run on the shared service" tick.
func serviceHost(service string) string {
	if u, err := url.Parse(service); err == nil && u.Host != "" {
		return u.Host
	}
	return service
}
