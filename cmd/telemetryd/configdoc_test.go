package main

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/internal/testkit/testenv"
)

// configDocPath is the operators' reference of every configuration key.
const configDocPath = "docs/configuration.md"

// docDefaultOverrides are defaults the doc states in words, because the
// value depends on the machine.
var docDefaultOverrides = map[string]string{
	"ingest.node_id": "host name",
}

// docKey is one configuration key as the doc must show it.
type docKey struct {
	key, def, env string
}

// configKeys lists every key of Config as setDefaults registers it.
func configKeys(val reflect.Value) []docKey {
	var keys []docKey
	walkConfig("", val, func(key string, f reflect.Value) {
		def, ok := docDefaultOverrides[key]
		if !ok {
			def = docDefault(f)
		}
		keys = append(keys, docKey{key: key, def: def, env: envName(key)})
	})
	return keys
}

// envName is the environment variable LoadConfig reads for key.
func envName(key string) string {
	return "TELEMETRY_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// docDefault renders a default as the doc writes it: durations the way a
// configuration file would (1m, 720h, 500ms), lists as [a, b], the empty
// string as "".
func docDefault(v reflect.Value) string {
	if d, ok := v.Interface().(time.Duration); ok {
		s := d.String()
		if strings.HasSuffix(s, "m0s") {
			s = strings.TrimSuffix(s, "0s")
		}
		if strings.HasSuffix(s, "h0m") {
			s = strings.TrimSuffix(s, "0m")
		}
		return s
	}
	switch v.Kind() {
	case reflect.String:
		if v.String() == "" {
			return `""`
		}
		return v.String()
	case reflect.Slice:
		parts := make([]string, v.Len())
		for i := range parts {
			parts[i] = fmt.Sprint(v.Index(i).Interface())
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case reflect.Bool:
		return strconv.FormatBool(v.Bool())
	default:
		return fmt.Sprint(v.Interface())
	}
}

// docRow is one row of the doc's key tables: | `key` | `default` | `VAR` | meaning |.
type docRow struct {
	line                   int
	key, def, env, meaning string
}

// parseConfigDoc reads the rows of every table whose first cell is a
// dotted key in a code span.
func parseConfigDoc(text string) []docRow {
	var rows []docRow
	for i, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), " | ")
		for j := range cells {
			cells[j] = strings.TrimSpace(cells[j])
		}
		key := strings.Trim(cells[0], "`")
		if !strings.Contains(key, ".") {
			continue
		}
		r := docRow{line: i + 1, key: key}
		if len(cells) > 1 {
			r.def = strings.Trim(cells[1], "`")
		}
		if len(cells) > 2 {
			r.env = strings.Trim(cells[2], "`")
		}
		if len(cells) > 3 {
			r.meaning = strings.Join(cells[3:], " | ")
		}
		rows = append(rows, r)
	}
	return rows
}

// The configuration reference names every key of Config, with its default
// and its environment variable, and no key that does not exist: adding,
// renaming or changing the default of a key without the doc fails here,
// with the row to write.
func TestConfigurationDoc(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), configDocPath))
	if err != nil {
		t.Fatal(err)
	}
	keys := configKeys(reflect.ValueOf(DefaultConfig()))
	if len(keys) < 50 {
		t.Fatalf("only %d configuration keys found: the walk over Config is broken", len(keys))
	}
	want := map[string]docKey{}
	for _, k := range keys {
		want[k.key] = k
	}
	seen := map[string]int{}
	for _, r := range parseConfigDoc(string(raw)) {
		k, ok := want[r.key]
		if !ok {
			t.Errorf("%s:%d documents `%s`, which is not a key of Config (cmd/telemetryd/config.go): remove the row or fix the key", configDocPath, r.line, r.key)
			continue
		}
		if prev, dup := seen[r.key]; dup {
			t.Errorf("%s:%d documents `%s` again (first at line %d): keep one row", configDocPath, r.line, r.key, prev)
		}
		seen[r.key] = r.line
		if r.def != k.def {
			t.Errorf("%s:%d `%s`: the default column says %q, DefaultConfig() has %q: write | `%s` | `%s` | ...", configDocPath, r.line, r.key, r.def, k.def, k.key, k.def)
		}
		if r.env != k.env {
			t.Errorf("%s:%d `%s`: the variable column says %q, LoadConfig reads %s", configDocPath, r.line, r.key, r.env, k.env)
		}
		if strings.TrimSpace(r.meaning) == "" {
			t.Errorf("%s:%d `%s`: the meaning column is empty: say in one line what it does", configDocPath, r.line, r.key)
		}
	}
	var missing []string
	for _, k := range keys {
		if _, ok := seen[k.key]; !ok {
			missing = append(missing, fmt.Sprintf("| `%s` | `%s` | `%s` | <one line: what it does> |", k.key, k.def, k.env))
		}
	}
	if len(missing) > 0 {
		t.Errorf("%s lacks %d configuration key(s) of Config; add these rows to the table of their section (the first part of the key), filling in the meaning:\n%s",
			configDocPath, len(missing), strings.Join(missing, "\n"))
	}
}

// The doc's default rendering is the one a configuration file takes.
func TestDocDefault(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		v    any
		want string
	}{
		{720 * time.Hour, "720h"}, {time.Minute, "1m"}, {90 * time.Minute, "1h30m"}, {30 * time.Second, "30s"},
		{500 * time.Millisecond, "500ms"}, {time.Duration(0), "0s"}, {"", `""`}, {[]string{}, "[]"},
		{[]string{"a:1", "b:2"}, "[a:1, b:2]"}, {int64(2 << 30), "2147483648"}, {true, "true"},
	} {
		if got := docDefault(reflect.ValueOf(c.v)); got != c.want {
			t.Errorf("docDefault(%#v) = %q, want %q", c.v, got, c.want)
		}
	}
}
