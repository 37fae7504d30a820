package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDesignNamesEveryPackage: docs/design.md §2 (Layout) names every
// package of the repository, so the table of what each one does cannot
// fall behind the code.
func TestDesignNamesEveryPackage(t *testing.T) {
	doc, err := os.ReadFile("docs/design.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	start := strings.Index(text, "## 2. Layout")
	end := strings.Index(text, "## 3.")
	if start < 0 || end < start {
		t.Fatal("docs/design.md has no §2 Layout before §3")
	}
	layout := text[start:end]
	var missing []string
	seen := map[string]bool{}
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "examples" || name == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") {
			return nil
		}
		dir := filepath.ToSlash(filepath.Dir(path))
		if dir == "." {
			dir = "main"
		}
		if !seen[dir] && !strings.Contains(layout, "`"+dir+"`") {
			missing = append(missing, dir)
		}
		seen[dir] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(missing) > 0 {
		t.Errorf("docs/design.md §2 (Layout) does not name these packages: %s", strings.Join(missing, ", "))
	}
}
