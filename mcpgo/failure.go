package mcpgo

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/client"
)

// ArgsHashLen is the length of an args_hash in hex characters (128 bits).
const ArgsHashLen = 32

// processKey is the args_hash key of the process: random, never sent, so
// that the service cannot test a guess of the arguments against a hash.
// Equal arguments hash equal within the process, across all its sessions.
var processKey = func() []byte {
	k := make([]byte, 32)
	_, _ = rand.Read(k) // never fails (crypto/rand panics instead)
	return k
}()

// ArgsHash is the args_hash of a tools/call's arguments (raw JSON; none is
// {}): HMAC-SHA256 under key (the process's random key when key is empty)
// of their canonical JSON (keys sorted at every level, no whitespace, no
// HTML escaping), its first ArgsHashLen hex characters. docs/sdks.md
// documents the scheme; the TypeScript SDK's is the same.
func ArgsHash(key []byte, args json.RawMessage) string {
	if len(key) == 0 {
		key = processKey
	}
	var v any
	if len(args) == 0 || json.Unmarshal(args, &v) != nil || v == nil {
		v = map[string]any{}
	}
	m := hmac.New(sha256.New, key)
	m.Write(client.CanonicalJSON(v))
	return hex.EncodeToString(m.Sum(nil))[:ArgsHashLen]
}

// toolArguments are the raw arguments of a tools/call request.
func toolArguments(req mcp.Request) (json.RawMessage, bool) {
	switch p := req.GetParams().(type) {
	case *mcp.CallToolParamsRaw:
		return p.Arguments, true
	case *mcp.CallToolParams:
		b, err := json.Marshal(p.Arguments)
		return b, err == nil
	}
	return nil, false
}

// setFailure adds what the middleware knows beyond the outcome: the error
// kind of a failed request, the size of the result, the hash of a tool
// call's arguments; and, for refused arguments, takes the argument values
// out of the message.
func (t *Telemetry) setFailure(it *analytics.Item, req mcp.Request, res mcp.Result, err error) {
	args, isCall := toolArguments(req)
	if isCall {
		it.ArgsHash = ArgsHash(t.argsHashKey, args)
	}
	if err == nil && res != nil {
		if b, merr := json.Marshal(res); merr == nil {
			n := int64(len(b))
			it.ResponseBytes = &n
		}
	}
	if it.Status != analytics.StatusError {
		return
	}
	it.ErrorKind = errorKind(it, res, err)
	if it.ErrorKind == analytics.ErrorKindInvalidParams && isCall {
		it.ErrorMessage = scrubValues(cutBytes(it.ErrorMessage, maxScrubbedMessage), args)
	}
}

// errorKind is the kind of a failed request. A handler's own error is known
// for what it is: go-sdk v1.8.0 turns an error returned by a typed tool
// handler into an isError result but keeps it (GetError), so such a result
// is an exception, where one the handler built itself is a tool_error. The
// rest is the service's derivation (analytics.DeriveErrorKind): the SDK's
// "unknown tool" and validation texts, JSON-RPC codes.
func errorKind(it *analytics.Item, res mcp.Result, err error) string {
	if k := contextKind(err); k != "" {
		return k
	}
	if err != nil {
		var we *jsonrpc.Error
		if errors.As(err, &we) {
			return analytics.DeriveErrorKind(it.Method, it.ErrorType, it.ErrorMessage)
		}
		return analytics.ErrorKindException // a method handler's own error
	}
	kind := analytics.DeriveErrorKind(it.Method, it.ErrorType, it.ErrorMessage)
	if kind != analytics.ErrorKindToolError {
		return kind
	}
	if r, ok := res.(interface{ GetError() error }); ok {
		if herr := r.GetError(); herr != nil {
			if k := contextKind(herr); k != "" {
				return k
			}
			var ute *json.UnmarshalTypeError
			if errors.As(herr, &ute) {
				return analytics.ErrorKindInvalidParams // the arguments did not fit the input type
			}
			return analytics.ErrorKindException
		}
	}
	return kind
}

// contextKind is the kind of a context error: the client cancelled, or a
// deadline passed.
func contextKind(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, context.Canceled):
		return analytics.ErrorKindCancelled
	case errors.Is(err, context.DeadlineExceeded):
		return analytics.ErrorKindTimeout
	}
	return ""
}

// valueMark replaces an argument value in a refusal message.
const valueMark = "<value>"

// maxScrubbedMessage bounds the bytes of a message searched for values; the
// client keeps only the first analytics.MaxErrorMessage characters anyway.
const maxScrubbedMessage = 16 << 10

// cutBytes keeps at most n bytes of s, on a character boundary.
func cutBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// maxScrubbedValues bounds the argument values looked for in a message.
const maxScrubbedValues = 256

// scrubValues replaces, in a refusal message, every argument value it
// quotes with "<value>" (the jsonschema validator of go-sdk writes them:
// `type: seven has type "string", want "integer"`): the message keeps which
// property and which rule refused the call, never what the agent sent.
// Leaf values (strings, numbers as sent and as Go prints them, booleans)
// are matched whole, between characters that are not letters, digits, "_"
// or ".", longest first.
func scrubValues(msg string, args json.RawMessage) string {
	var v any
	dec := json.NewDecoder(strings.NewReader(string(args)))
	dec.UseNumber()
	if len(args) == 0 || dec.Decode(&v) != nil {
		return msg
	}
	set := map[string]bool{}
	var walk func(v any, depth int)
	walk = func(v any, depth int) {
		if len(set) >= maxScrubbedValues || depth > 32 {
			return
		}
		switch x := v.(type) {
		case string:
			if x != "" {
				set[x] = true
				if q, _ := json.Marshal(x); len(q) > 2 {
					set[string(q[1:len(q)-1])] = true // as JSON quotes it
				}
			}
		case json.Number:
			set[x.String()] = true
			if _, err := x.Int64(); err == nil {
				set[x.String()+"/1"] = true // as the validator prints a big.Rat
			}
			if f, err := x.Float64(); err == nil {
				set[strconv.FormatFloat(f, 'g', -1, 64)] = true
				set[strconv.FormatFloat(f, 'f', -1, 64)] = true
			}
		case bool:
			set[strconv.FormatBool(x)] = true
		case []any:
			for _, e := range x {
				walk(e, depth+1)
			}
		case map[string]any:
			for _, e := range x {
				walk(e, depth+1)
			}
		}
	}
	walk(v, 0)
	values := make([]string, 0, len(set))
	for s := range set {
		values = append(values, s)
	}
	sort.Slice(values, func(i, j int) bool {
		if len(values[i]) != len(values[j]) {
			return len(values[i]) > len(values[j])
		}
		return values[i] < values[j]
	})
	for _, val := range values {
		msg = replaceWhole(msg, val)
	}
	return msg
}

// replaceWhole replaces the occurrences of v in s that are whole: not
// inside a longer word or number.
func replaceWhole(s, v string) string {
	var b strings.Builder
	from := 0
	first, _ := utf8.DecodeRuneInString(v)
	last, _ := utf8.DecodeLastRuneInString(v)
	for {
		i := strings.Index(s[from:], v)
		if i < 0 {
			b.WriteString(s[from:])
			return b.String()
		}
		i += from
		before, _ := utf8.DecodeLastRuneInString(s[:i])
		after, _ := utf8.DecodeRuneInString(s[i+len(v):])
		okBefore := !wordRune(first) || i == 0 || !wordRune(before)
		okAfter := !wordRune(last) || i+len(v) == len(s) || !wordRune(after)
		if okBefore && okAfter {
			b.WriteString(s[from:i])
			b.WriteString(valueMark)
		} else {
			b.WriteString(s[from : i+len(v)])
		}
		from = i + len(v)
	}
}

func wordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || r == '.'
}
