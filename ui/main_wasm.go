//go:build wasm

package main

import (
	"github.com/vugu/vugu"
	"github.com/vugu/vugu/domrender"
)

// main mounts the Vugu UI on #app and runs its render loop.
func main() {
	renderer, err := domrender.New("#app")
	if err != nil {
		panic(err)
	}
	defer renderer.Release()
	buildEnv, err := vugu.NewBuildEnv(renderer.EventEnv())
	if err != nil {
		panic(err)
	}
	root := &Root{}
	for first, ok := true, true; ok; first, ok = false, renderer.EventWait() {
		if err := renderer.Render(buildEnv.RunBuild(root)); err != nil {
			panic(err)
		}
		root.syncDOM()
		if first {
			root.markReady()
		}
	}
}
