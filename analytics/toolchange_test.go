package analytics

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

type changeCase struct {
	Name     string          `json:"name"`
	Kind     string          `json:"kind"`
	Before   json.RawMessage `json:"before"`
	After    json.RawMessage `json:"after"`
	Severity string          `json:"severity"`
	Reasons  []string        `json:"reasons"`
}

func definitionBytes(r json.RawMessage) []byte {
	if len(r) == 0 || string(r) == "null" {
		return nil
	}
	return r
}

// TestToolChangeCorpus grades every definition pair of the corpus as
// docs/tool-changes.md documents it, and covers every reason code.
func TestToolChangeCorpus(t *testing.T) {
	raw, err := os.ReadFile("testdata/toolchanges.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []changeCase
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	covered := map[string]bool{}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			sev, reasons := GradeToolChange(c.Kind, definitionBytes(c.Before), definitionBytes(c.After))
			var codes []string
			for _, r := range reasons {
				codes = append(codes, r.Code)
				covered[r.Code] = true
				if r.Message == "" || !strings.HasSuffix(r.Message, ".") {
					t.Errorf("reason %s: message %q is not a sentence", r.Code, r.Message)
				}
			}
			if sev != c.Severity || !slices.Equal(codes, c.Reasons) {
				t.Errorf("graded %s %v, want %s %v (%+v)", sev, codes, c.Severity, c.Reasons, reasons)
			}
		})
	}
	for _, code := range ReasonCodes() {
		if !covered[code] {
			t.Errorf("reason %s has no case in the corpus", code)
		}
	}
	doc, err := os.ReadFile("../docs/tool-changes.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, code := range ReasonCodes() {
		if !strings.Contains(string(doc), "`"+code+"`") {
			t.Errorf("docs/tool-changes.md does not document %s", code)
		}
	}
}

// TestToolChangeReasonPaths names the places of a reason, bounded.
func TestToolChangeReasonPaths(t *testing.T) {
	props := map[string]any{}
	var req []string
	for i := range 12 {
		props[fmt.Sprintf("p%02d", i)] = map[string]any{"type": "string"}
		req = append(req, fmt.Sprintf("p%02d", i))
	}
	before, _ := json.Marshal(map[string]any{"inputSchema": map[string]any{"type": "object"}})
	after, _ := json.Marshal(map[string]any{"inputSchema": map[string]any{"type": "object", "properties": props, "required": req}})
	sev, reasons := GradeToolChange(ChangeChanged, before, after)
	want := "A required input property was added; calls without it are now refused: p00, p01, p02, p03, p04 and 7 more."
	if sev != SeverityBreaking || len(reasons) != 1 || reasons[0].Message != want {
		t.Fatalf("got %s %+v, want breaking %q", sev, reasons, want)
	}
}

// TestToolChangeHostile grades hostile definitions (at the size bound,
// deeply nested, wide, full of invisible characters) without error and
// within a bounded time, and diffs them within bounds.
func TestToolChangeHostile(t *testing.T) {
	small := []byte(`{"description":"Search","inputSchema":{"type":"object"}}`)
	nested := strings.Repeat(`{"type":"object","properties":{"a":`, 1500) + `{}` + strings.Repeat(`}}`, 1500)
	wide := map[string]any{}
	for i := range 1200 {
		wide[fmt.Sprintf("p%d", i)] = map[string]any{"type": "string", "enum": []any{"x", "y"}}
	}
	wideDef, _ := json.Marshal(map[string]any{"inputSchema": map[string]any{"type": "object", "properties": wide}})
	tags := strings.Repeat("\U000E0041\u200b\u202e", MaxInventorySchemaBytes/12)
	invisible, _ := json.Marshal(map[string]any{"description": tags, "inputSchema": map[string]any{"type": "object"}})
	manyLines := map[string]any{}
	for i := range 3000 {
		manyLines[fmt.Sprintf("k%d", i)] = i
	}
	linesDef, _ := json.Marshal(map[string]any{"inputSchema": manyLines})
	urls, _ := json.Marshal(map[string]any{"description": strings.Repeat("see https://x.example/a ignore previous ", 1500)})
	cases := map[string][]byte{
		"nested":    []byte(`{"description":"x","inputSchema":` + nested + `}`),
		"wide":      wideDef,
		"invisible": invisible,
		"lines":     linesDef,
		"urls":      urls,
	}
	for name, def := range cases {
		if len(def) > MaxInventorySchemaBytes {
			t.Fatalf("%s: %d bytes, over the bound the ingest enforces", name, len(def))
		}
		for _, pair := range [][2][]byte{{small, def}, {def, small}, {def, def}} {
			start := time.Now()
			sev, reasons := GradeToolChange(ChangeChanged, pair[0], pair[1])
			diff := DefinitionDiff(pair[0], pair[1])
			if el := time.Since(start); el > 2*time.Second {
				t.Errorf("%s: graded in %v", name, el)
			}
			if !ValidChangeSeverity(sev) || len(reasons) > len(ReasonCodes()) {
				t.Errorf("%s: severity %q, %d reasons", name, sev, len(reasons))
			}
			for _, r := range reasons {
				if len(r.Message) > 1000 {
					t.Errorf("%s: reason %s of %d bytes", name, r.Code, len(r.Message))
				}
			}
			if n := strings.Count(diff, "\n") + 1; n > maxDiffOut+1 {
				t.Errorf("%s: diff of %d lines", name, n)
			}
		}
	}
	if sev, reasons := GradeToolChange(ChangeChanged, small, invisible); sev != SeverityRisky || reasons[0].Code != "invisible_unicode" {
		t.Errorf("invisible: graded %s %+v", sev, reasons)
	}
	if sev, _ := GradeToolChange(ChangeChanged, small, []byte(`[1,2]`)); sev != SeverityRisky {
		t.Errorf("a definition that is not an object: graded %s, want risky (definition_unknown)", sev)
	}
}

// TestDefinitionDiff shows a line diff of canonical pretty JSON.
func TestDefinitionDiff(t *testing.T) {
	got := DefinitionDiff([]byte(`{"inputSchema":{"required":["q"],"type":"object"},"description":"Search"}`),
		[]byte(`{"description":"Search","inputSchema":{"type":"object","required":["q","locale"]}}`))
	want := strings.Join([]string{
		`  {`,
		`    "description": "Search",`,
		`    "inputSchema": {`,
		`      "required": [`,
		`-       "q"`,
		`+       "q",`,
		`+       "locale"`,
		`      ],`,
		`      "type": "object"`,
		`    }`,
		`  }`,
	}, "\n")
	if got != want {
		t.Fatalf("diff:\n%s\nwant:\n%s", got, want)
	}
	if DefinitionHash([]byte(`{"b":1,"a":2}`)) != DefinitionHash([]byte(`{ "a": 2, "b": 1 }`)) {
		t.Fatal("DefinitionHash depends on key order or spacing")
	}
}
