package analytics

import (
	"sort"
	"strings"
	"unicode/utf8"
)

// ClosestName returns the candidate most probably meant by name, an unknown
// tool (or prompt, resource) name an agent asked for, and whether one is
// close enough to say so.
//
// Names are compared case-insensitively by optimal string alignment
// distance (Levenshtein with adjacent transpositions: "get_forcast" is 1
// from "get_forecast", "get_froecast" 1 too). A candidate is close when its
// distance is at most ClosestThreshold(name) and it is not name itself; a
// candidate that ends with name after a separator ("weather.get_forecast"
// for "get_forecast"), or that name ends with ("get_forecast" for
// "weather_get_forecast"), is close too, at distance 1: agents often add or
// drop a namespace. Ties go to the smaller distance, then the shorter
// candidate, then the lesser by code point, so the answer does not depend
// on the candidates' order. Only the first MaxNameLen characters of each
// name are compared, so the cost is bounded: at most MaxNameLen²
// operations per candidate.
func ClosestName(name string, candidates []string) (string, bool) {
	a := foldName(name)
	if a == "" {
		return "", false
	}
	limit := ClosestThreshold(name)
	best, bestDist := "", limit+1
	sorted := append([]string(nil), candidates...)
	sort.Slice(sorted, func(i, j int) bool {
		if len(sorted[i]) != len(sorted[j]) {
			return len(sorted[i]) < len(sorted[j])
		}
		return sorted[i] < sorted[j]
	})
	for _, c := range sorted {
		if c == name {
			continue
		}
		b := foldName(c)
		if b == "" {
			continue
		}
		d := limit + 1
		if a == b || namespaced(a, b) || namespaced(b, a) {
			d = 1
			if a == b {
				d = 0 // the same name in another case: the closest of all
			}
		} else if abs(utf8.RuneCountInString(a)-utf8.RuneCountInString(b)) <= limit {
			d = osaDistance(a, b, limit)
		}
		if d < bestDist {
			best, bestDist = c, d
		}
	}
	return best, best != ""
}

// ClosestThreshold is the largest edit distance at which ClosestName calls a
// candidate close to name: a third of name's length in characters, at
// least 1 and at most 3. So "serch" (5) may be 1 from "search", and
// "get_forcast" (11) up to 3 from a real name; "fetch" is not close to
// "search" (3 > 2).
func ClosestThreshold(name string) int {
	n := utf8.RuneCountInString(name) / 3
	if n < 1 {
		return 1
	}
	if n > 3 {
		return 3
	}
	return n
}

// foldName lowercases s and keeps its first MaxNameLen characters.
func foldName(s string) string {
	if utf8.RuneCountInString(s) > MaxNameLen {
		r := []rune(s)
		s = string(r[:MaxNameLen])
	}
	return strings.ToLower(s)
}

// namespaced reports whether long is short with a namespace in front: it
// ends with short, right after one of the separators MCP names use.
func namespaced(short, long string) bool {
	if len(long) <= len(short)+1 || !strings.HasSuffix(long, short) {
		return false
	}
	switch long[len(long)-len(short)-1] {
	case '.', '_', '-', '/', ':':
		return true
	}
	return false
}

// osaDistance is the optimal string alignment distance between a and b, in
// characters; once every cell of a row exceeds limit it stops and returns
// limit+1.
func osaDistance(a, b string, limit int) int {
	s, t := []rune(a), []rune(b)
	prev2 := make([]int, len(t)+1)
	prev := make([]int, len(t)+1)
	cur := make([]int, len(t)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(s); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(t); j++ {
			cost := 1
			if s[i-1] == t[j-1] {
				cost = 0
			}
			d := min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && s[i-1] == t[j-2] && s[i-2] == t[j-1] {
				d = min(d, prev2[j-2]+1)
			}
			cur[j] = d
			rowMin = min(rowMin, d)
		}
		if rowMin > limit {
			return limit + 1
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(t)]
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
