package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/dynosim/dynosim-web/public"
)

// runServe implements `dynosim serve [--addr 127.0.0.1:8080]`: it serves
// the web page embedded in the binary (package public). It prints the URL
// it listens on (useful with --addr 127.0.0.1:0) and serves until killed.
func runServe(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8080", "listen `ADDRESS` (host:port; port 0 picks a free one)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("serve: unexpected argument %q", fs.Arg(0))}
	}
	if !public.Built() {
		fmt.Fprintln(os.Stderr, "dynosim: warning: the page's WebAssembly is not built into this binary; use `make serve` (or `make wasm` before building)")
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	fmt.Printf("dynosim: serving the web page on http://%s/\n", ln.Addr())
	srv := &http.Server{Handler: public.Handler(), ReadHeaderTimeout: 10 * time.Second}
	return srv.Serve(ln)
}
