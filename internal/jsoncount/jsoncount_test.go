package jsoncount

import (
	"strings"
	"testing"
)

func TestAtPath(t *testing.T) {
	items := []string{"items"}
	spans := []string{"resourceSpans|resource_spans", Wildcard, "scopeSpans|scope_spans", Wildcard, "spans"}
	cases := []struct {
		name  string
		body  string
		path  []string
		limit int
		n     int
		over  bool
	}{
		{"empty batch", `{"items":[]}`, items, 3, 0, false},
		{"three", `{"items":[{},{"a":[1,2,3,4]},"x"]}`, items, 3, 3, false},
		{"four over three", `{"items":[{},{},{},{}]}`, items, 3, 4, true},
		{"case-insensitive key", `{"ITEMS":[1,2,3,4]}`, items, 3, 4, true},
		{"escaped key", `{"\u0069tems":[1,2,3,4]}`, items, 3, 4, true},
		{"nested items not counted", `{"other":{"items":[1,2,3,4]},"items":[1]}`, items, 3, 1, false},
		{"strings with brackets", `{"items":["],[", "\"]", "{"]}`, items, 3, 3, false},
		{"every items key counts", `{"items":[1,2],"items":[3,4]}`, items, 3, 4, true},
		{"malformed", `{"items":[1,2`, items, 3, 2, false},
		{"spans summed", `{"resourceSpans":[{"scopeSpans":[{"spans":[{},{}]},{"spans":[{}]}]},{"scope_spans":[{"spans":[{}]}]}]}`, spans, 10, 4, false},
		{"spans over", `{"resourceSpans":[{"scopeSpans":[{"spans":[{},{}]},{"spans":[{},{}]}]}]}`, spans, 3, 4, true},
		{"deep nesting is left to the decoder", `{"items":[` + strings.Repeat("[", 5000) + `]}`, items, 3, 1, false},
	}
	for _, c := range cases {
		n, over := AtPath([]byte(c.body), c.path, c.limit)
		if n != c.n || over != c.over {
			t.Errorf("%s: %d %v, want %d %v", c.name, n, over, c.n, c.over)
		}
	}
}

func FuzzAtPath(f *testing.F) {
	f.Add([]byte(`{"items":[{},{},{"x":"]"}]}`))
	f.Add([]byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{}]}]}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		n, over := AtPath(body, []string{"items"}, 5)
		if n < 0 || (over && n != 6) || (!over && n > 5) {
			t.Fatalf("%d %v", n, over)
		}
	})
}

func TestValues(t *testing.T) {
	for _, c := range []struct {
		body string
		want int
	}{
		{`{}`, 1},
		{`{"a": [1, "x", {"b": null}], "c": true}`, 7},
		{`[[], [[]], {}]`, 5},
		{`{"events": [{}, {}, {}]}`, 5},
	} {
		if n, over := Values([]byte(c.body), 100); n != c.want || over {
			t.Errorf("%s: %d %v, want %d", c.body, n, over, c.want)
		}
	}
	if n, over := Values([]byte(`[`+strings.Repeat(`{},`, 1000)+`{}]`), 10); !over || n != 11 {
		t.Errorf("over the limit: %d %v", n, over)
	}
}

// strByteByByte is the reference of scanner.str: it reads every byte, a
// backslash escaping the next one.
func strByteByByte(b []byte, i int) (end int, bad bool) {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1, false
		}
	}
	return len(b), true
}

// FuzzStr checks that the quote-to-quote string skip ends where reading
// byte by byte does, on any input after an opening quote.
func FuzzStr(f *testing.F) {
	for _, s := range []string{`"abc"x`, `"a\"b"`, `"a\\"b"`, `"a\\\"b"`, `"\`, `"abc`, `"\\\\"`, `""`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 || b[0] != '"' {
			return
		}
		s := scanner{b: b}
		s.str()
		end, bad := strByteByByte(b, 0)
		if s.bad != bad || (!bad && s.i != end) {
			t.Fatalf("%q: str ends at %d (bad %v), byte by byte at %d (bad %v)", b, s.i, s.bad, end, bad)
		}
	})
}
