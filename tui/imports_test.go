package tui

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestConsoleImportsOnlyTheEdge: the console's code reads the engine
// through its edge types (engine/view), the API (engine/api) and the
// in-process Engine (engine); the engine's inner packages (config,
// runner, queue, worker, ...) stay out of it, so that they can change
// without the console.
func TestConsoleImportsOnlyTheEdge(t *testing.T) {
	allowed := map[string]bool{
		"dispatch-tui/engine": true, "dispatch-tui/engine/api": true,
		"dispatch-tui/engine/view": true, "dispatch-tui/engine/termsafe": true,
	}
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if strings.HasPrefix(p, "dispatch-tui/") && !strings.HasPrefix(p, "dispatch-tui/tui") && !allowed[p] {
				t.Errorf("tui/%s imports %s: the console reads the engine only through engine/view, engine/api, engine and engine/termsafe", path, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
