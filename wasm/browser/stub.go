//go:build !wasm

package main

// main is a stub so that native `go vet ./...` and `go test ./...` build this
// package; the real entry point is main.go (GOOS=js GOARCH=wasm).
func main() {}
