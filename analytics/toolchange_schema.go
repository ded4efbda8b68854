package analytics

import (
	"bytes"
	"encoding/json"
	"sort"
)

// finding is one difference between two JSON Schemas at a path: a
// breaking code (required_added, property_removed, type_narrowed,
// enum_narrowed) or a benign one (optional_property_added,
// schema_widened).
type finding struct{ code, path string }

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// narrowings compares schema b (before) with a (after) at path: what a
// accepts no longer that b did, and what it accepts in addition. It reads
// properties, required, type, enum/const and items, recursively, within
// maxGradeDepth and maxGradeNodes.
func (g *grader) narrowings(b, a map[string]any, path string, depth int, out *[]finding) {
	g.nodes++
	if depth > maxGradeDepth || g.nodes > maxGradeNodes {
		return
	}
	at := path
	if at == "" {
		at = "(root)"
	}
	if bt, at2 := typeSet(b), typeSet(a); at2 != nil && !typesCover(at2, bt) {
		*out = append(*out, finding{"type_narrowed", at})
	} else if bt != nil && (at2 == nil || !typesCover(bt, at2)) {
		*out = append(*out, finding{"schema_widened", at})
	}
	if be, ae := enumSet(b), enumSet(a); ae != nil && (be == nil || !subset(be, ae)) {
		*out = append(*out, finding{"enum_narrowed", at})
	} else if be != nil && (ae == nil || !subset(ae, be)) {
		*out = append(*out, finding{"schema_widened", at})
	}
	breq, areq := stringSet(b["required"]), stringSet(a["required"])
	for _, r := range sortedKeys(areq) {
		if !breq[r] {
			*out = append(*out, finding{"required_added", join(path, r)})
		}
	}
	bp, _ := b["properties"].(map[string]any)
	ap, _ := a["properties"].(map[string]any)
	for _, name := range sortedKeys(bp) {
		bs, _ := bp[name].(map[string]any)
		as, ok := ap[name].(map[string]any)
		_, present := ap[name]
		switch {
		case !present:
			*out = append(*out, finding{"property_removed", join(path, name)})
		case ok && bs != nil:
			g.narrowings(bs, as, join(path, name), depth+1, out)
		}
	}
	for _, name := range sortedKeys(ap) {
		if _, ok := bp[name]; !ok && !areq[name] {
			*out = append(*out, finding{"optional_property_added", join(path, name)})
		}
	}
	if bi, ok := b["items"].(map[string]any); ok {
		if ai, ok := a["items"].(map[string]any); ok {
			g.narrowings(bi, ai, path+"[]", depth+1, out)
		}
	}
}

// typeSet is a schema's "type" as a set; nil when absent (any type).
func typeSet(s map[string]any) map[string]bool {
	switch t := s["type"].(type) {
	case string:
		return map[string]bool{t: true}
	case []any:
		set := map[string]bool{}
		for _, v := range t {
			if str, ok := v.(string); ok {
				set[str] = true
			}
		}
		return set
	}
	return nil
}

// typesCover reports whether types wide accept every value of types
// narrow (nil: any type; "number" covers "integer").
func typesCover(wide, narrow map[string]bool) bool {
	if wide == nil {
		return true
	}
	if narrow == nil {
		return false
	}
	for t := range narrow {
		if !wide[t] && !(t == "integer" && wide["number"]) {
			return false
		}
	}
	return true
}

// enumSet is a schema's enum (or const) as canonical JSON values; nil
// when it has neither.
func enumSet(s map[string]any) map[string]bool {
	if c, ok := s["const"]; ok {
		return map[string]bool{canonicalString(c): true}
	}
	e, ok := s["enum"].([]any)
	if !ok {
		return nil
	}
	set := make(map[string]bool, len(e))
	for _, v := range e {
		set[canonicalString(v)] = true
	}
	return set
}

func subset(small, big map[string]bool) bool {
	for v := range small {
		if !big[v] {
			return false
		}
	}
	return true
}

func stringSet(v any) map[string]bool {
	set := map[string]bool{}
	if arr, ok := v.([]any); ok {
		for _, x := range arr {
			if s, ok := x.(string); ok {
				set[s] = true
			}
		}
	}
	return set
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// canonicalString is v's canonical JSON (keys sorted, no HTML escaping).
func canonicalString(v any) string {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if e.Encode(v) != nil {
		return ""
	}
	return string(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
}
