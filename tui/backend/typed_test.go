package backend

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestVerbsTravelTyped: between the console and the engine no verb is
// a string: no function of the console, its backend or the API client
// takes a parameter named for a verb as a string (a verb's name is read
// once where it enters, docs/design.md §4).
func TestVerbsTravelTyped(t *testing.T) {
	dirs := []string{".", "..", "../../engine/api"}
	fset := token.NewFileSet()
	for _, dir := range dirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no Go files in %s: %v", dir, err)
		}
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(f, func(n ast.Node) bool {
				ft, ok := n.(*ast.FuncType)
				if !ok {
					return true
				}
				for _, p := range ft.Params.List {
					id, ok := p.Type.(*ast.Ident)
					if !ok || id.Name != "string" {
						continue
					}
					for _, name := range p.Names {
						if strings.Contains(strings.ToLower(name.Name), "verb") {
							t.Errorf("%s: parameter %s is a verb as a string", fset.Position(name.Pos()), name.Name)
						}
					}
				}
				return true
			})
		}
	}
}
