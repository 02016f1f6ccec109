package main

// Placeholder until cmd/dynosim/serve.go (the web page server) lands:
// whoever adds serve.go deletes this file in the same commit.

import "errors"

func runServe(args []string) error { return errors.New("serve: the web page is not built into this binary yet") }
