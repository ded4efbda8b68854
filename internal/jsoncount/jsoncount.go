// Package jsoncount counts the elements of JSON arrays at a path without
// decoding anything: one pass over the bytes, no allocation for a body
// without escaped keys. Decoders of outside input use it to refuse a body
// with too many elements before building any of them, so that what a
// request costs is bounded by what will be accepted.
package jsoncount

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Wildcard in a path stands for every element of an array.
const Wildcard = "*"

// AtPath sums the lengths of the arrays found at path in body, where each
// path element is an object key (matched case-insensitively, as
// encoding/json matches field names, and any of the alternatives separated
// by "|") or Wildcard. It stops as soon as the sum passes limit and reports
// over = true. Malformed JSON stops the count where it breaks, with over =
// false: the real decoder then reports the error.
func AtPath(body []byte, path []string, limit int) (n int, over bool) {
	s := scanner{b: body, path: path, limit: limit}
	s.value(0)
	return s.n, s.over
}

// Values counts every value of body (objects, arrays, their members and
// elements, strings, numbers, literals), what a generic decoder builds one
// Go value for. It stops as soon as the count passes limit and reports
// over = true; malformed JSON stops the count where it breaks.
func Values(body []byte, limit int) (n int, over bool) {
	s := scanner{b: body, limit: limit, all: true}
	s.value(-1)
	return s.n, s.over
}

// maxNesting bounds the recursion: deeper input is left to the decoder.
const maxNesting = 1000

type scanner struct {
	b     []byte
	i     int
	nest  int
	path  []string
	limit int
	n     int
	over  bool
	bad   bool
	all   bool // count every value (Values)
}

func (s *scanner) stop() bool { return s.over || s.bad }

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// value scans one value; depth is how much of the path it stands at (-1:
// off the path).
func (s *scanner) value(depth int) {
	if s.nest++; s.nest > maxNesting {
		s.bad = true
		return
	}
	defer func() { s.nest-- }()
	if s.all {
		if s.n++; s.n > s.limit {
			s.over = true
			return
		}
	}
	s.ws()
	if s.i >= len(s.b) {
		s.bad = true
		return
	}
	switch s.b[s.i] {
	case '{':
		s.object(depth)
	case '[':
		s.array(depth)
	case '"':
		s.str()
	default:
		// A number, true, false or null: up to the next delimiter.
		for s.i < len(s.b) && !strings.ContainsRune(",]} \t\n\r", rune(s.b[s.i])) {
			s.i++
		}
	}
}

func (s *scanner) object(depth int) {
	s.i++ // {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return
	}
	for !s.stop() {
		s.ws()
		if s.i >= len(s.b) || s.b[s.i] != '"' {
			s.bad = true
			return
		}
		start := s.i
		s.str()
		key := s.b[start:s.i]
		s.ws()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			s.bad = true
			return
		}
		s.i++
		next := -1
		if depth >= 0 && depth < len(s.path) && s.path[depth] != Wildcard && keyMatches(key, s.path[depth]) {
			next = depth + 1
		}
		s.value(next)
		if s.stop() {
			return
		}
		s.ws()
		if s.i < len(s.b) && s.b[s.i] == ',' {
			s.i++
			continue
		}
		if s.i < len(s.b) && s.b[s.i] == '}' {
			s.i++
			return
		}
		s.bad = true
		return
	}
}

func (s *scanner) array(depth int) {
	s.i++ // [
	counted := depth == len(s.path)
	elem := -1
	if depth >= 0 && depth < len(s.path) && s.path[depth] == Wildcard {
		elem = depth + 1
	}
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == ']' {
		s.i++
		return
	}
	for !s.stop() {
		if counted {
			if s.n++; s.n > s.limit {
				s.over = true
				return
			}
		}
		s.value(elem)
		if s.stop() {
			return
		}
		s.ws()
		if s.i < len(s.b) && s.b[s.i] == ',' {
			s.i++
			continue
		}
		if s.i < len(s.b) && s.b[s.i] == ']' {
			s.i++
			return
		}
		s.bad = true
		return
	}
}

// str skips a string, from its opening quote to past its closing one. A
// quote closes the string when an even number of backslashes precedes it
// (each backslash escapes the next byte), so it jumps from quote to quote
// (bytes.IndexByte, vectorised) instead of reading every byte.
func (s *scanner) str() {
	start := s.i + 1
	for i := start; ; {
		q := bytes.IndexByte(s.b[i:], '"')
		if q < 0 {
			s.i, s.bad = len(s.b), true
			return
		}
		i += q
		bs := 0
		for j := i - 1; j >= start && s.b[j] == '\\'; j-- {
			bs++
		}
		i++
		if bs%2 == 0 {
			s.i = i
			return
		}
	}
}

// keyMatches reports whether a quoted JSON key equals one of the
// alternatives of want ("a|b"), ignoring case.
func keyMatches(quoted []byte, want string) bool {
	key := string(quoted[1 : len(quoted)-1])
	if strings.ContainsRune(key, '\\') {
		if err := json.Unmarshal(quoted, &key); err != nil {
			return false
		}
	}
	for _, w := range strings.Split(want, "|") {
		if strings.EqualFold(key, w) {
			return true
		}
	}
	return false
}
