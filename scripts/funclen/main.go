// Command funclen lists the functions of the module's non-test Go files
// longer than a limit (80 lines by default), longest first. Tables are
// left out: a function at least half of whose lines are composite
// literals (a route table, a list of cases) reads as data, not logic.
// -fail makes it exit 1 on a find; scripts/lint.sh runs it so.
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

type long struct {
	pos   token.Position
	name  string
	lines int
}

func main() {
	limit := flag.Int("max", 80, "longest function allowed, in lines")
	fail := flag.Bool("fail", false, "exit 1 when a function is longer")
	flag.Parse()
	root := "."
	if flag.NArg() > 0 {
		root = flag.Arg(0)
	}
	var found []long
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "node_modules" || n == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			start, end := fset.Position(fn.Pos()), fset.Position(fn.End())
			n := end.Line - start.Line + 1
			if n <= *limit || 2*literalLines(fset, fn.Body) >= n {
				continue
			}
			found = append(found, long{start, funcName(fn), n})
		}
		return nil
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "funclen:", err)
		os.Exit(2)
	}
	sort.Slice(found, func(i, j int) bool { return found[i].lines > found[j].lines })
	for _, l := range found {
		fmt.Printf("%s:%d: %s is %d lines (limit %d)\n", l.pos.Filename, l.pos.Line, l.name, l.lines, *limit)
	}
	if *fail && len(found) > 0 {
		os.Exit(1)
	}
}

// literalLines counts the lines spanned by the outermost composite
// literals of body.
func literalLines(fset *token.FileSet, body *ast.BlockStmt) int {
	n := 0
	ast.Inspect(body, func(node ast.Node) bool {
		if lit, ok := node.(*ast.CompositeLit); ok {
			n += fset.Position(lit.End()).Line - fset.Position(lit.Pos()).Line + 1
			return false
		}
		return true
	})
	return n
}

func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	t := fn.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if ix, ok := t.(*ast.IndexExpr); ok {
		t = ix.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fn.Name.Name
	}
	return fn.Name.Name
}
