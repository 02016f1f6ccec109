package main

import "github.com/dynosim/dynosim-web/core/config"

// checkConfig parses a config the way the CLI does and returns its error.
func checkConfig(yaml []byte, name string) error {
	_, err := config.Parse(name, yaml, nil)
	return err
}
