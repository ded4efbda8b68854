package analytics

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Tool changes graded (docs/tool-changes.md): every inventory change gets a
// severity and the reasons for it, from the tool's definitions before and
// after ({description, inputSchema, outputSchema, annotations}, as the SDK
// reported them). Grading is pure and bounded: definitions are at most
// MaxInventorySchemaBytes, schemas are walked at most maxGradeDepth deep
// and maxGradeNodes nodes, and each reason lists at most maxReasonPaths
// places.

// Severities of a tool change, worst first.
const (
	SeverityBreaking = "breaking"
	SeverityRisky    = "risky"
	SeverityBenign   = "benign"
)

// SeverityRank orders severities: breaking 3, risky 2, benign 1, anything
// else 0.
func SeverityRank(s string) int {
	switch s {
	case SeverityBreaking:
		return 3
	case SeverityRisky:
		return 2
	case SeverityBenign:
		return 1
	}
	return 0
}

// ValidChangeSeverity reports whether s is a severity of a tool change.
func ValidChangeSeverity(s string) bool { return SeverityRank(s) > 0 }

// Reason codes of a graded change, with the severity each carries.
var reasonSeverity = map[string]string{
	"tool_removed":            SeverityBreaking,
	"required_added":          SeverityBreaking,
	"property_removed":        SeverityBreaking,
	"type_narrowed":           SeverityBreaking,
	"enum_narrowed":           SeverityBreaking,
	"output_narrowed":         SeverityBreaking,
	"read_only_dropped":       SeverityRisky,
	"became_destructive":      SeverityRisky,
	"idempotent_dropped":      SeverityRisky,
	"became_open_world":       SeverityRisky,
	"description_urls":        SeverityRisky,
	"model_instructions":      SeverityRisky,
	"invisible_unicode":       SeverityRisky,
	"description_grew":        SeverityRisky,
	"output_schema_removed":   SeverityRisky,
	"definition_unknown":      SeverityRisky,
	"tool_added":              SeverityBenign,
	"optional_property_added": SeverityBenign,
	"schema_widened":          SeverityBenign,
	"output_schema_added":     SeverityBenign,
	"description_changed":     SeverityBenign,
	"annotations_changed":     SeverityBenign,
	"other_change":            SeverityBenign,
}

// ReasonCodes lists every reason code, sorted.
func ReasonCodes() []string {
	out := make([]string, 0, len(reasonSeverity))
	for c := range reasonSeverity {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}

// ChangeReason is one reason of a graded change: a short code and a
// sentence.
type ChangeReason struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Grading bounds.
const (
	maxGradeDepth  = 32
	maxGradeNodes  = 20000
	maxReasonPaths = 5
)

// ToolDefinition is a parsed tool definition; nil members are absent.
type ToolDefinition struct {
	Description  *string
	InputSchema  map[string]any
	OutputSchema map[string]any
	Annotations  map[string]any
	raw          map[string]any
}

// ParseToolDefinition reads a definition as stored; ok is false for nil
// or anything but a JSON object.
func ParseToolDefinition(b []byte) (ToolDefinition, bool) {
	var m map[string]any
	if len(b) == 0 || json.Unmarshal(b, &m) != nil || m == nil {
		return ToolDefinition{}, false
	}
	d := ToolDefinition{raw: m}
	if s, ok := m["description"].(string); ok {
		d.Description = &s
	}
	d.InputSchema, _ = m["inputSchema"].(map[string]any)
	d.OutputSchema, _ = m["outputSchema"].(map[string]any)
	d.Annotations, _ = m["annotations"].(map[string]any)
	return d, true
}

// grader collects reasons: per code, the places it was found.
type grader struct {
	order  []string
	places map[string][]string
	extra  map[string]int
	nodes  int
}

func (g *grader) add(code, place string) {
	if g.places == nil {
		g.places, g.extra = map[string][]string{}, map[string]int{}
	}
	if _, ok := g.places[code]; !ok {
		g.order = append(g.order, code)
		g.places[code] = nil
	}
	if place == "" {
		return
	}
	for _, p := range g.places[code] {
		if p == place {
			return
		}
	}
	if len(g.places[code]) < maxReasonPaths {
		g.places[code] = append(g.places[code], place)
	} else {
		g.extra[code]++
	}
}

// GradeToolChange grades one inventory change of kind (ChangeAdded,
// ChangeRemoved, ChangeChanged) from the tool's definitions before and
// after (nil when unknown): the worst severity of its reasons, and every
// reason, the worst first.
func GradeToolChange(kind string, before, after []byte) (string, []ChangeReason) {
	var g grader
	switch kind {
	case ChangeRemoved:
		g.add("tool_removed", "")
	case ChangeAdded:
		g.add("tool_added", "")
		if a, ok := ParseToolDefinition(after); ok {
			g.text(ToolDefinition{}, a)
		}
	default:
		b, okB := ParseToolDefinition(before)
		a, okA := ParseToolDefinition(after)
		if !okB || !okA {
			g.add("definition_unknown", "")
			break
		}
		g.compare(b, a)
	}
	return g.result()
}

func (g *grader) compare(b, a ToolDefinition) {
	var in []finding
	g.narrowings(b.InputSchema, a.InputSchema, "", 0, &in)
	for _, f := range in {
		g.add(f.code, f.path)
	}
	switch {
	case b.OutputSchema != nil && a.OutputSchema == nil:
		g.add("output_schema_removed", "")
	case b.OutputSchema == nil && a.OutputSchema != nil:
		g.add("output_schema_added", "")
	case b.OutputSchema != nil:
		var out []finding
		g.narrowings(b.OutputSchema, a.OutputSchema, "", 0, &out)
		for _, f := range out {
			if reasonSeverity[f.code] == SeverityBreaking {
				g.add("output_narrowed", f.path+" ("+strings.ReplaceAll(f.code, "_", " ")+")")
			} else {
				g.add("schema_widened", "output "+f.path)
			}
		}
	}
	g.annotations(b.Annotations, a.Annotations)
	g.text(b, a)
	if len(g.order) == 0 && canonicalString(b.raw) != canonicalString(a.raw) {
		g.add("other_change", "")
	}
}

// Annotation hints and their defaults when absent (the MCP specification).
var hintDefaults = map[string]bool{"readOnlyHint": false, "destructiveHint": true, "idempotentHint": false, "openWorldHint": true}

func hint(m map[string]any, name string) bool {
	if v, ok := m[name].(bool); ok {
		return v
	}
	return hintDefaults[name]
}

// destructive is the effective destructiveHint: a read-only tool is not
// destructive, whatever its destructiveHint says.
func destructive(m map[string]any) bool {
	return !hint(m, "readOnlyHint") && hint(m, "destructiveHint")
}

func (g *grader) annotations(b, a map[string]any) {
	found := len(g.order)
	if hint(b, "readOnlyHint") && !hint(a, "readOnlyHint") {
		g.add("read_only_dropped", "")
	}
	if !destructive(b) && destructive(a) {
		g.add("became_destructive", "")
	}
	if hint(b, "idempotentHint") && !hint(a, "idempotentHint") {
		g.add("idempotent_dropped", "")
	}
	if !hint(b, "openWorldHint") && hint(a, "openWorldHint") {
		g.add("became_open_world", "")
	}
	if canonicalString(b) != canonicalString(a) && len(g.order) == found {
		g.add("annotations_changed", "")
	}
}

// result is the worst severity and the reasons, the worst first (codes of
// one severity in the order found).
func (g *grader) result() (string, []ChangeReason) {
	reasons := make([]ChangeReason, 0, len(g.order))
	worst := SeverityBenign
	for _, code := range g.order {
		reasons = append(reasons, ChangeReason{Code: code, Message: reasonMessage(code, g.places[code], g.extra[code])})
		if SeverityRank(reasonSeverity[code]) > SeverityRank(worst) {
			worst = reasonSeverity[code]
		}
	}
	sort.SliceStable(reasons, func(i, j int) bool {
		return SeverityRank(reasonSeverity[reasons[i].Code]) > SeverityRank(reasonSeverity[reasons[j].Code])
	})
	return worst, reasons
}

var reasonSentences = map[string]string{
	"tool_removed":            "The tool is no longer listed; every call of it now fails.",
	"required_added":          "A required input property was added; calls without it are now refused",
	"property_removed":        "An input property was removed; calls that send it may be refused",
	"type_narrowed":           "An input property's type was narrowed; values it took before are refused",
	"enum_narrowed":           "An input property's allowed values were narrowed; values it took before are refused",
	"output_narrowed":         "The outputSchema no longer accepts results it accepted before",
	"read_only_dropped":       "readOnlyHint went from true to false: the tool may now modify its environment.",
	"became_destructive":      "destructiveHint went from false to true: the tool may now destroy data.",
	"idempotent_dropped":      "idempotentHint went from true to false: repeating a call may now have more effect.",
	"became_open_world":       "openWorldHint went from false to true: the tool now reaches outside systems.",
	"description_urls":        "The description gained URLs",
	"model_instructions":      "The description gained instructions addressed to the model",
	"invisible_unicode":       "The definition gained invisible Unicode characters",
	"description_grew":        "The description grew more than twofold",
	"output_schema_removed":   "The outputSchema was removed: clients validating structured results lose their contract.",
	"definition_unknown":      "The definition changed but the SDK did not report it before and after, so the change cannot be graded further.",
	"tool_added":              "The tool is new.",
	"optional_property_added": "An optional input property was added",
	"schema_widened":          "A schema accepts more than before",
	"output_schema_added":     "An outputSchema was added.",
	"description_changed":     "The description's wording changed.",
	"annotations_changed":     "The annotations changed without flipping a safety hint.",
	"other_change":            "The definition changed in a way that neither breaks nor endangers callers.",
}

func reasonMessage(code string, places []string, extra int) string {
	s := reasonSentences[code]
	if len(places) == 0 {
		if !strings.HasSuffix(s, ".") {
			s += "."
		}
		return s
	}
	s += ": " + strings.Join(places, ", ")
	if extra > 0 {
		s += fmt.Sprintf(" and %d more", extra)
	}
	return s + "."
}
