//go:build js && wasm

package main

import "syscall/js"

// validate(configText, configName) → {error} or {}. It checks the YAML with
// the same parser and messages as the CLI so the editor can flag problems as
// the user types.
func validate(this js.Value, args []js.Value) (result any) {
	defer func() {
		if r := recover(); r != nil {
			result = errResult(panicMessage(r))
		}
	}()
	if len(args) < 1 {
		return errResult("dynosimValidate: missing config")
	}
	name := stringOr(argOr(args, 1), "config.yaml")
	yaml, err := bytesOf(args[0], name, maxConfig)
	if err == nil {
		err = checkConfig(yaml, name)
	}
	if err != nil {
		return errResult(err.Error())
	}
	return js.ValueOf(map[string]any{})
}

func argOr(args []js.Value, i int) js.Value {
	if i < len(args) {
		return args[i]
	}
	return js.Undefined()
}
