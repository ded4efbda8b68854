package clickhouse

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestMethodsLiveOnARole keeps the split of the store: every production
// method is on a role (Reads, Sink, Lifecycle, Migrator) or on the core,
// never on the DB that embeds them (only Close is), since a consumer holds
// only its role and would not see it; and no method name is on two of
// them, which would make it ambiguous on DB.
func TestMethodsLiveOnARole(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	paths, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	roles := map[string]bool{"core": true, "Reads": true, "Sink": true, "Lifecycle": true, "Migrator": true}
	owners := map[string][]string{}
	perRole := map[string]int{}
	for _, f := range files {
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil {
				continue
			}
			star, ok := fn.Recv.List[0].Type.(*ast.StarExpr)
			if !ok {
				continue
			}
			id, ok := star.X.(*ast.Ident)
			if !ok {
				continue
			}
			recv, name := id.Name, fn.Name.Name
			switch {
			case recv == "DB" && name != "Close":
				t.Errorf("%s: (*DB).%s: put it on the role that serves it, or on core if several do", fset.Position(fn.Pos()), name)
			case roles[recv]:
				owners[name] = append(owners[name], recv)
				perRole[recv]++
			}
		}
	}
	for name, on := range owners {
		if len(on) > 1 {
			sort.Strings(on)
			t.Errorf("method %s is on %s: one of them only", name, strings.Join(on, " and "))
		}
	}
	for r := range roles {
		if perRole[r] == 0 {
			t.Errorf("role %s has no methods: the parse missed the package", r)
		}
	}
}
