package httpapi

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	telemetry "github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/internal/testkit/testenv"
)

// errorCode is one code constant of error.go and the status its comment
// names ("// 422, well-formed but invalid input").
type errorCode struct {
	name, value string
	status      int // 0 when the comment names none
}

// errorCodes reads the code constants of error.go from its source, so a
// code added there without a row in codeStatus cannot go unnoticed.
func errorCodes(t *testing.T) []errorCode {
	t.Helper()
	path := filepath.Join(testenv.RepoRoot(), "error.go")
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var codes []errorCode
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING || !strings.HasPrefix(name.Name, "E") {
					continue
				}
				value, _ := strconv.Unquote(lit.Value)
				c := errorCode{name: name.Name, value: value}
				if vs.Comment != nil {
					text := strings.TrimSpace(vs.Comment.Text())
					if n, err := strconv.Atoi(strings.TrimRight(strings.Fields(text + " ")[0], ",")); err == nil {
						c.status = n
					}
				}
				codes = append(codes, c)
			}
		}
	}
	return codes
}

// Every error code has its status row in the one table (codeStatus), with
// the status error.go's comment names; EOTHER alone has none, standing for
// whatever status the HTTP stack raised. The codes the stack's own
// statuses get (statusCode) map back to those statuses.
func TestEveryErrorCodeHasAStatus(t *testing.T) {
	t.Parallel()
	codes := errorCodes(t)
	if len(codes) < 20 {
		t.Fatalf("only %d error codes read from error.go: the parse is broken", len(codes))
	}
	known := map[string]bool{}
	for _, c := range codes {
		known[c.value] = true
		status, ok := codeStatus[c.value]
		if c.value == telemetry.EOTHER {
			if ok {
				t.Errorf("%s (%q) stands for any status the HTTP stack raises; it must have no row in codeStatus", c.name, c.value)
			}
			continue
		}
		if !ok {
			t.Errorf("error.go's %s (%q) has no row in codeStatus (httpapi/errors.go): add `telemetry.%s: http.Status...,` (the status its comment names)", c.name, c.value, c.name)
			continue
		}
		if c.status == 0 {
			t.Errorf("error.go's %s (%q) has no status in its comment: write `// %d, <when>`", c.name, c.value, status)
		} else if c.status != status {
			t.Errorf("error.go says %s (%q) is %d, codeStatus maps it to %d: make them agree", c.name, c.value, c.status, status)
		}
	}
	for code := range codeStatus {
		if !known[code] {
			t.Errorf("codeStatus has a row for %q, which is no code of error.go", code)
		}
	}
	for status, code := range statusCode {
		if codeStatus[code] != status {
			t.Errorf("statusCode gives %d the code %q, which codeStatus maps to %d", status, code, codeStatus[code])
		}
	}
}
