package analytics

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// The text checks of a graded change: URLs and instructions to the model
// gained by the descriptions (the tool's and its schemas'), invisible
// characters gained anywhere in the definition, and a tool description
// grown more than twofold.

// urlPattern finds URLs: a scheme and host, or a www. host.
var urlPattern = regexp.MustCompile(`(?i)\b(?:https?|ftp|file|data|javascript)://[^\s"'<>)\]]+|\bwww\.[a-z0-9-]+\.[^\s"'<>)\]]+`)

// instructionPatterns are phrases that address the model rather than
// describe the tool, as in tool-poisoning attacks.
var instructionPatterns = []*regexp.Regexp{
	regexp.MustCompile(`(?i)\bignore\s+(?:all\s+|any\s+)?(?:previous|prior|above|earlier|other|the|your)\b`),
	regexp.MustCompile(`(?i)\bdisregard\b`),
	regexp.MustCompile(`(?i)\b(?:do\s+not|don't|never)\s+(?:tell|mention|inform|reveal|disclose|show)\b`),
	regexp.MustCompile(`(?i)\byou\s+(?:must|have\s+to|are\s+required\s+to|should\s+always)\b`),
	regexp.MustCompile(`(?i)<\s*(?:important|system|instructions?)\s*>`),
	regexp.MustCompile(`(?i)\bsystem\s+prompt\b`),
	regexp.MustCompile(`(?i)\bbefore\s+using\s+this\s+tool\b`),
}

// descriptionGrowthMin is the least growth, in characters, that counts
// as a description grown more than twofold ("Get" to "Get a page" is
// wording, not a rug pull).
const descriptionGrowthMin = 32

// definitionTexts are a definition's description strings (the tool's and
// every "description" in its schemas) and all its strings (keys too),
// within maxGradeNodes.
func definitionTexts(d ToolDefinition) (descriptions, all []string) {
	if d.Description != nil {
		descriptions = append(descriptions, *d.Description)
	}
	nodes := 0
	var walk func(v any, key string, depth int)
	walk = func(v any, key string, depth int) {
		nodes++
		if depth > maxGradeDepth || nodes > maxGradeNodes {
			return
		}
		switch x := v.(type) {
		case string:
			all = append(all, x)
			if key == "description" && depth > 1 {
				descriptions = append(descriptions, x)
			}
		case map[string]any:
			for _, k := range sortedKeys(x) {
				all = append(all, k)
				walk(x[k], k, depth+1)
			}
		case []any:
			for _, e := range x {
				walk(e, "", depth+1)
			}
		}
	}
	walk(d.raw, "", 0)
	return descriptions, all
}

func (g *grader) text(b, a ToolDefinition) {
	bd, ball := definitionTexts(b)
	ad, aall := definitionTexts(a)
	before, after := strings.Join(bd, "\n"), strings.Join(ad, "\n")
	had := map[string]bool{}
	for _, u := range urlPattern.FindAllString(before, -1) {
		had[u] = true
	}
	for _, u := range urlPattern.FindAllString(after, -1) {
		if !had[u] {
			g.add("description_urls", fmt.Sprintf("%q", truncateRunes(u, 80)))
		}
	}
	for _, p := range instructionPatterns {
		if n := len(p.FindAllStringIndex(after, -1)); n > len(p.FindAllStringIndex(before, -1)) {
			g.add("model_instructions", fmt.Sprintf("%q", truncateRunes(p.FindString(after), 40)))
		}
	}
	bi, ai := invisibleCounts(ball), invisibleCounts(aall)
	for _, k := range invisibleKinds {
		if ai[k] > bi[k] {
			g.add("invisible_unicode", fmt.Sprintf("%d %s", ai[k]-bi[k], k))
		}
	}
	var bl, al int
	if b.Description != nil {
		bl = utf8.RuneCountInString(*b.Description)
	}
	if a.Description != nil {
		al = utf8.RuneCountInString(*a.Description)
	}
	if b.raw != nil && al > 2*bl && al-bl >= descriptionGrowthMin {
		g.add("description_grew", fmt.Sprintf("%d to %d characters", bl, al))
	}
	if b.raw != nil && before != after {
		g.add("description_changed", "")
	}
}

// Kinds of invisible characters.
var invisibleKinds = []string{"tag characters", "zero-width characters", "bidirectional controls"}

// invisibleKind names the kind of an invisible character, "" for others:
// tag characters U+E0000–U+E007F, zero-width characters (U+200B–U+200D,
// U+2060, U+FEFF, U+180E, U+00AD) and bidirectional controls (U+200E,
// U+200F, U+061C, U+202A–U+202E, U+2066–U+2069).
func invisibleKind(r rune) string {
	switch {
	case r >= 0xE0000 && r <= 0xE007F:
		return invisibleKinds[0]
	case r >= 0x200B && r <= 0x200D, r == 0x2060, r == 0xFEFF, r == 0x180E, r == 0x00AD:
		return invisibleKinds[1]
	case r == 0x200E, r == 0x200F, r == 0x061C, r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069:
		return invisibleKinds[2]
	}
	return ""
}

func invisibleCounts(texts []string) map[string]int {
	n := map[string]int{}
	for _, s := range texts {
		for _, r := range s {
			if k := invisibleKind(r); k != "" {
				n[k]++
			}
		}
	}
	return n
}

func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}
