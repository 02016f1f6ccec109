// Package defaultconfig holds the product's default config, the YAML a bare
// `dynosim predict` runs and the page's editor starts from, in one file so
// the two cannot drift apart. It imports nothing, so the UI can use it
// without growing.
package defaultconfig

import _ "embed"

// YAML is default.yaml: 8 round-robin vLLM workers replaying a Mooncake
// trace named sample.jsonl (the CLI's embedded sample).
//
//go:embed default.yaml
var YAML string
