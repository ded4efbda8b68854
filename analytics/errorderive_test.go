package analytics

import (
	"encoding/json"
	"os"
	"testing"
)

// errorKindCase is one row of testdata/errorkinds.json: what an SDK (by
// version) or an OTLP emitter sends for a failure, and its kind. The
// TypeScript SDK's test reads the same file (sdk/typescript/test/failure.test.js),
// so both classify alike.
type errorKindCase struct {
	SDK       string `json:"sdk"`
	Method    string `json:"method"`
	ErrorType string `json:"error_type"`
	Message   string `json:"message"`
	Kind      string `json:"kind"`
}

func TestDeriveErrorKind(t *testing.T) {
	b, err := os.ReadFile("testdata/errorkinds.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []errorKindCase
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, c := range cases {
		got := DeriveErrorKind(c.Method, c.ErrorType, c.Message)
		if got != c.Kind {
			t.Errorf("%s: DeriveErrorKind(%q, %q, %q) = %q, want %q", c.SDK, c.Method, c.ErrorType, c.Message, got, c.Kind)
		}
		if !ValidErrorKind(c.Kind) {
			t.Errorf("%s: %q is not a kind", c.SDK, c.Kind)
		}
		seen[c.SDK] = true
	}
	for _, sdk := range []string{"ts1", "ts2", "go", "py", "otlp"} {
		if !seen[sdk] {
			t.Errorf("no case of %s", sdk)
		}
	}
}

func TestFillErrorKind(t *testing.T) {
	it := Item{Method: MethodToolsCall, Status: StatusError, ErrorType: "-32602", ErrorMessage: "Tool a not found"}
	it.FillErrorKind()
	if it.ErrorKind != ErrorKindUnknownTool {
		t.Errorf("derived %q", it.ErrorKind)
	}
	kept := Item{Method: MethodToolsCall, Status: StatusError, ErrorType: "-32602", ErrorKind: ErrorKindAuth}
	kept.FillErrorKind()
	ok := Item{Method: MethodToolsCall, Status: StatusOK}
	ok.FillErrorKind()
	if kept.ErrorKind != ErrorKindAuth || ok.ErrorKind != "" {
		t.Errorf("kept %q, ok %q", kept.ErrorKind, ok.ErrorKind)
	}
}
