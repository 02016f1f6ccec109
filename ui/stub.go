//go:build !wasm

package main

// main is a stub so that native `go vet ./...` and `go test ./...` build this
// package; the UI's entry point is main_wasm.go (GOOS=js GOARCH=wasm).
func main() {}
