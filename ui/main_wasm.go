//go:build wasm

package main

import (
	"syscall/js"

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
	wake := coalesce(renderer.EventWait)
	yield := browserTurn()
	for first := true; ; first = false {
		if err := renderer.Render(buildEnv.RunBuild(root)); err != nil {
			panic(err)
		}
		root.syncDOM()
		if first {
			root.markReady()
		}
		if _, ok := <-wake; !ok {
			return
		}
		// Vugu 0.4 re-emits the whole page on every render (half a MB of
		// DOM instructions once results are shown), and asks for one
		// render per event: a paste or a burst of keystrokes in the
		// config editor queued one full render per input event. Yielding
		// to the browser once lets the events already queued run first;
		// their render requests then fold into this one.
		yield()
		select {
		case _, ok := <-wake:
			if !ok {
				return
			}
		default:
		}
	}
}

// browserTurn returns a function that blocks until the browser has run the
// tasks already queued (a setTimeout of 0 runs after them). A Go timer would
// not do: the runtime fires an expired timer inside the next event's resume,
// before the browser has dispatched the events queued behind it.
func browserTurn() func() {
	done := make(chan struct{}, 1)
	f := js.FuncOf(func(js.Value, []js.Value) any {
		done <- struct{}{}
		return nil
	})
	return func() {
		js.Global().Call("setTimeout", f, 0)
		<-done
	}
}

// coalesce turns Vugu's render requests (EventWait returns once per request)
// into a channel that holds at most one pending request; it closes when the
// page goes away.
func coalesce(wait func() bool) <-chan struct{} {
	wake := make(chan struct{}, 1)
	go func() {
		defer close(wake)
		for wait() {
			select {
			case wake <- struct{}{}:
			default:
			}
		}
	}()
	return wake
}
