package analytics

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"
)

// DefinitionHash is the SHA-256 (hex) of a definition's canonical JSON
// (keys sorted recursively, no whitespace): the key the inventory keeps
// distinct definitions by. Unlike schema_hash it covers every member the
// SDK sent (outputSchema too). "" when b is not JSON.
func DefinitionHash(b []byte) string {
	var v any
	if json.Unmarshal(b, &v) != nil {
		return ""
	}
	sum := sha256.Sum256([]byte(canonicalString(v)))
	return hex.EncodeToString(sum[:])
}

// Diff bounds: the diff compares at most maxDiffLines lines of each
// definition and returns at most maxDiffOut lines.
const (
	maxDiffLines = 4000
	maxDiffOut   = 2000
	maxDiffCells = 1_000_000
)

// prettyLines is a definition as canonical JSON indented by two spaces,
// one line each; nil for nil. Past maxGradeDepth a value is shown compact
// on one line (cut at 200 characters), and at most maxDiffLines+1 lines
// are made: indenting deep nesting costs the square of its depth.
func prettyLines(b []byte) []string {
	var v any
	if len(b) == 0 || json.Unmarshal(b, &v) != nil {
		return nil
	}
	var lines []string
	prettyValue(v, "", "", ",", 0, &lines)
	if n := len(lines); n > 0 {
		lines[n-1] = strings.TrimSuffix(lines[n-1], ",")
	}
	return lines
}

// prettyValue appends v's lines, the first prefixed by key (`"k": ` or
// ""), the last followed by comma.
func prettyValue(v any, indent, key, comma string, depth int, lines *[]string) {
	if len(*lines) > maxDiffLines {
		return
	}
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 || depth >= maxGradeDepth {
			break
		}
		*lines = append(*lines, indent+key+"{")
		keys := sortedKeys(x)
		for i, k := range keys {
			c := ","
			if i == len(keys)-1 {
				c = ""
			}
			prettyValue(x[k], indent+"  ", canonicalString(k)+": ", c, depth+1, lines)
		}
		*lines = append(*lines, indent+"}"+comma)
		return
	case []any:
		if len(x) == 0 || depth >= maxGradeDepth {
			break
		}
		*lines = append(*lines, indent+key+"[")
		for i, e := range x {
			c := ","
			if i == len(x)-1 {
				c = ""
			}
			prettyValue(e, indent+"  ", "", c, depth+1, lines)
		}
		*lines = append(*lines, indent+"]"+comma)
		return
	}
	*lines = append(*lines, indent+key+truncateRunes(canonicalString(v), 200)+comma)
}

// DefinitionDiff is a unified-style line diff of two definitions as
// canonical pretty JSON: lines kept start with "  ", removed with "- ",
// added with "+ ". Bounded: past maxDiffLines lines a side, or when the
// comparison would cost more than maxDiffCells, the changed middle is
// shown as all removed then all added; at most maxDiffOut lines, then a
// last line saying how many were left out.
func DefinitionDiff(before, after []byte) string {
	b, a := prettyLines(before), prettyLines(after)
	if len(b) > maxDiffLines {
		b = b[:maxDiffLines]
	}
	if len(a) > maxDiffLines {
		a = a[:maxDiffLines]
	}
	pre := 0
	for pre < len(b) && pre < len(a) && b[pre] == a[pre] {
		pre++
	}
	suf := 0
	for suf < len(b)-pre && suf < len(a)-pre && b[len(b)-1-suf] == a[len(a)-1-suf] {
		suf++
	}
	var out []string
	for _, l := range b[:pre] {
		out = append(out, "  "+l)
	}
	out = append(out, middleDiff(b[pre:len(b)-suf], a[pre:len(a)-suf])...)
	for _, l := range b[len(b)-suf:] {
		out = append(out, "  "+l)
	}
	if len(out) > maxDiffOut {
		n := len(out) - maxDiffOut
		out = append(out[:maxDiffOut], "… "+strconv.Itoa(n)+" more lines")
	}
	return strings.Join(out, "\n")
}

// middleDiff diffs two line runs by their longest common subsequence, or
// as all removed then all added when that would cost too much.
func middleDiff(b, a []string) []string {
	var out []string
	if len(b)*len(a) > maxDiffCells {
		for _, l := range b {
			out = append(out, "- "+l)
		}
		for _, l := range a {
			out = append(out, "+ "+l)
		}
		return out
	}
	// lcs[i][j]: the LCS length of b[i:] and a[j:].
	lcs := make([][]int32, len(b)+1)
	for i := range lcs {
		lcs[i] = make([]int32, len(a)+1)
	}
	for i := len(b) - 1; i >= 0; i-- {
		for j := len(a) - 1; j >= 0; j-- {
			if b[i] == a[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	i, j := 0, 0
	for i < len(b) || j < len(a) {
		switch {
		case i < len(b) && j < len(a) && b[i] == a[j]:
			out = append(out, "  "+b[i])
			i, j = i+1, j+1
		case i < len(b) && (j == len(a) || lcs[i+1][j] >= lcs[i][j+1]):
			out = append(out, "- "+b[i])
			i++
		default:
			out = append(out, "+ "+a[j])
			j++
		}
	}
	return out
}
