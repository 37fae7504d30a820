// The test that every non-test Go file says its job in its first comment
// (docs/design.md §2).

package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// goFileName finds the name of a Go file in a comment.
var goFileName = regexp.MustCompile(`\b[a-z0-9_]+\.go\b`)

// TestEveryFileSaysItsJob holds the convention of docs/design.md §2: the
// first comment of every non-test .go file (after a //go:build line) comes
// before the package clause and says the file's job. In one file of a
// package it is the package doc ("// Package x ..."); in the others it is
// kept apart from the package clause by a blank line, so that it is not
// part of the package doc (a command's doc starts "Command x"). No comment
// before the package clause lists the package's files by hand: one naming
// four or more .go files of its own package is such a list, and falls
// behind the files.
func TestEveryFileSaysItsJob(t *testing.T) {
	fset := token.NewFileSet()
	docs := map[string][]string{} // package dir -> files holding its package doc
	var problems []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.PackageClauseOnly)
		if err != nil {
			return err
		}
		dir := filepath.Dir(path)
		if f.Doc != nil {
			docs[dir] = append(docs[dir], path)
			want := "Package " + f.Name.Name + " "
			if f.Name.Name == "main" {
				want = "Command "
			}
			if !strings.HasPrefix(f.Doc.Text(), want) {
				problems = append(problems, path+": the package doc does not start with \""+want+"\"")
			}
		}
		if job := firstComment(f); job == nil || job.Pos() > f.Package {
			problems = append(problems, path+": no comment before the package clause saying the file's job")
		}
		for _, cg := range f.Comments {
			if own := ownFilesNamed(dir, cg.Text()); len(own) > 3 {
				problems = append(problems, fset.Position(cg.Pos()).String()+": a comment lists files by hand ("+strings.Join(own, ", ")+")")
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for dir, files := range docs {
		if len(files) > 1 {
			problems = append(problems, dir+": package doc in more than one file ("+strings.Join(files, ", ")+"); keep one, make the others' a file's job line apart from the package clause")
		}
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// firstComment is f's first comment group that is not only directives
// (//go:build and the like), or nil.
func firstComment(f *ast.File) *ast.CommentGroup {
	for _, cg := range f.Comments {
		if strings.TrimSpace(cg.Text()) != "" {
			return cg
		}
	}
	return nil
}

// ownFilesNamed returns the distinct .go files of dir that text names.
func ownFilesNamed(dir, text string) []string {
	seen := map[string]bool{}
	var own []string
	for _, n := range goFileName.FindAllString(text, -1) {
		if seen[n] {
			continue
		}
		seen[n] = true
		if _, err := os.Stat(filepath.Join(dir, n)); err == nil {
			own = append(own, n)
		}
	}
	return own
}
