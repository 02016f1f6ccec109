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
	render := func() {
		if err := renderer.Render(buildEnv.RunBuild(root)); err != nil {
			panic(err)
		}
		root.syncDOM()
		root.syncQuick()
	}
	render()
	root.markReady()
	wake, turn := coalesce(renderer.EventWait), browserTurn()
	for {
		// Vugu 0.4 re-emits the whole page on every render (half a MB of
		// DOM instructions once results are shown) and asks for one render
		// per event: a paste or a burst of keystrokes in the config editor
		// rendered once per input event. A request that comes after the
		// browser has had a turn since the last render renders at once (a
		// click shows its effect before the click returns); requests that
		// come within the same turn wait for its end and fold into one.
		ended := turn()
		select {
		case _, ok := <-wake:
			if !ok {
				return
			}
			<-ended
			select {
			case _, ok := <-wake:
				if !ok {
					return
				}
			default:
			}
		case <-ended:
			if _, ok := <-wake; !ok {
				return
			}
		}
		render()
	}
}

// browserTurn returns a function that starts a browser turn and returns a
// channel that receives when the browser has run the tasks queued before
// it (a setTimeout of 0). A Go timer would not do: the runtime fires an
// expired timer inside the next event's resume, before the browser has
// dispatched the events queued behind it. One turn is outstanding at a time.
func browserTurn() func() <-chan struct{} {
	done := make(chan struct{}, 1)
	f := js.FuncOf(func(js.Value, []js.Value) any {
		done <- struct{}{}
		return nil
	})
	return func() <-chan struct{} {
		js.Global().Call("setTimeout", f, 0)
		return done
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
