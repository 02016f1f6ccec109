// Command vugujs prints vugu's DOM helper script (the jsHelperScript constant
// of domrender/renderer-js-script.go, given as the argument) so `make wasm`
// can ship it as public/vugu-render.js: vugu runs it with window.eval, which
// the page's Content-Security-Policy forbids (public/app.js skips that eval).
package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strconv"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "vugujs:", err)
		os.Exit(1)
	}
}

func run() error {
	if len(os.Args) != 2 {
		return fmt.Errorf("usage: vugujs VUGU/domrender/renderer-js-script.go")
	}
	f, err := parser.ParseFile(token.NewFileSet(), os.Args[1], nil, 0)
	if err != nil {
		return err
	}
	script, err := helperScript(f)
	if err != nil {
		return err
	}
	_, err = fmt.Println(script)
	return err
}

// helperScript is the value of the file's jsHelperScript string constant.
func helperScript(f *ast.File) (string, error) {
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			v := s.(*ast.ValueSpec)
			for i, n := range v.Names {
				if n.Name != "jsHelperScript" || i >= len(v.Values) {
					continue
				}
				if lit, ok := v.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					return strconv.Unquote(lit.Value)
				}
			}
		}
	}
	return "", fmt.Errorf("no jsHelperScript string constant")
}
