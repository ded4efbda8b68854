package wire

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

// fastSeeds are bodies at the edges of what parseFast takes and gives up on.
var fastSeeds = []string{
	`{"items":[{"timestamp":"2026-11-20T10:00:00Z","session_id":"s","method":"ping","attributes":{"a":"b"}}]}`,
	` { "items" : [ { "timestamp" : "2026-11-20T10:00:00.123456789+02:00" , "method" : "tools/call" , "name" : "x" , "duration_ms" : -0 , "response_bytes" : 0 } ] } `,
	`{"items":[{"timestamp":"2026-11-20T10:00:00Z","method":"ping","duration_ms":1.5e2,"response_bytes":12,"id":"a","args_hash":"h","error_message":"m","error_type":"E"}]}`,
	`{"items":[{"timestamp":"2026-11-20T10:00:00Z","method":"ping","duration_ms":null,"response_bytes":null,"attributes":null,"status":null}]}`,
	`{"items":[{"timestamp":"2026-11-20T10:00:00Z","method":"ping","response_bytes":1.0}]}`,
	`{"items":[{"timestamp":"2026-11-20T10:00:00Z","method":"ping","duration_ms":1e999}]}`,
	`{"items":[{"timestamp":"2026-11-20T10:00:00Z","method":"ping","method":"x"}]}`,
	`{"items":[{"timestamp":"2026-11-20T10:00:00Z","Method":"ping"}]}`,
	`{"items":[{"timestamp":"2026-11-20T10:00:00Z","method":"p\u0069ng"}]}`,
	`{"items":[{"timestamp":"2026-11-20T10:00:00Z","method":"pïng","attributes":{"k":"v","k":"w"}}]}`,
	`{"items":[{"timestamp":"2026-11-20T10:00:00Z","method":"ping","attributes":{}},{},{"timestamp":"yesterday","method":"ping"}]}`,
	`{"items":[{"timestamp":"2026-11-20T10:00:00Z","method":"ping","error_kind":"timeout"}],"other":1}`,
	`{"items":[{"timestamp":"2026-11-20T10:00:00Z","method":"ping"},]}`,
	`{"items":[{"timestamp":"2026-11-20T10:00:00Z","method":"ping"}]}x`,
	"{\"items\":[{\"timestamp\":\"2026-11-20T10:00:00Z\",\"method\":\"p\xffng\"}]}",
	`{"items":[null]}`,
	`{"items":[]}`,
}

// FuzzParseFast is the differential test of the hand-written decoder:
// whatever body it takes, it must give the batch the previous decoders
// give (sonic, and encoding/json item by item), the same items, the same
// drops; what it gives up on is theirs to answer.
func FuzzParseFast(f *testing.F) {
	for _, s := range append(fastSeeds, escapedSeeds...) {
		f.Add([]byte(s))
	}
	f.Add(benchBodyOf(40, true))
	f.Fuzz(func(t *testing.T, body []byte) {
		b, ok := parseFast(body, testNow)
		if !ok {
			return
		}
		for name, parse := range map[string]func([]byte, time.Time) (Batch, error){"sonic": parseSonic, "encoding/json": parseBatchSlow} {
			ref, err := parse(body, testNow)
			if err != nil {
				t.Fatalf("the fast decoder took a body %s refuses: %v", name, err)
			}
			if b.Dropped != ref.Dropped || !reflect.DeepEqual(b.Items, ref.Items) {
				t.Fatalf("the fast decoder's %+v differs from %s's %+v", b, name, ref)
			}
		}
	})
}

// TestParseFastTakesWhatSDKsSend: the shape of the SDKs' batches (the
// benchmark's, with and without the failure fields, whitespace and nulls)
// takes the fast decoder, not the fallback, so its speed does not silently
// go away.
func TestParseFastTakesWhatSDKsSend(t *testing.T) {
	now := time.Now()
	indented, _ := json.MarshalIndent(json.RawMessage(benchBodyOf(3, true)), "", "  ")
	// encoding/json (and the Go client) escape <, > and & as \u003c...
	escaped, _ := json.Marshal(map[string]any{"items": []any{map[string]any{"timestamp": now.UTC().Format(time.RFC3339Nano),
		"method": "tools/call", "name": "q", "error_type": "E", "error_message": "expected <string> & \"x\"\n🚀"}}})
	for name, body := range map[string][]byte{"plain": benchBodyOf(50, false), "failure": benchBodyOf(50, true), "indented": indented,
		"seed":    []byte(strings.ReplaceAll(fastSeeds[3], "2026-11-20T10:00:00Z", now.UTC().Format(time.RFC3339))),
		"html":    escaped,
		"escapes": []byte(strings.ReplaceAll(escapedSeeds[0], "2026-11-20T10:00:00Z", now.UTC().Format(time.RFC3339)))} {
		b, ok := parseFast(body, now)
		if !ok || len(b.Items) == 0 || b.Dropped != 0 {
			t.Fatalf("%s: fast decoder ok=%v, %d items, %d dropped", name, ok, len(b.Items), b.Dropped)
		}
	}
}

// escapedSeeds: strings with the escapes parseFast decodes, and those it
// leaves to the old path.
var escapedSeeds = []string{
	`{"items":[{"timestamp":"2026-11-20T10:00:00Z","method":"ping","error_type":"E","error_message":"tool \"x\" failed:\n\tat a\\b \/ \r\b\f","attributes":{"k":"v \"q\""}}]}`,
	`{"items":[{"timestamp":"2026-11-20T10:00:00Z","method":"ping","error_message":"caf\u00e9 \u003cb\u003e \ud83d\ude80 \u0000"}]}`,
	`{"items":[{"timestamp":"2026-11-20T10:00:00Z","method":"ping","error_message":"\ud800x \udc00\ud800"}]}`,
	`{"items":[{"timestamp":"2026-11-20T10:00:00Z","method":"ping","error_message":"\ud83d\u0041 \u12G4"}]}`,
	`{"items":[{"timestamp":"2026-11-20T10:00:00\u005a","method":"ping"}]}`,
	`{"items":[{"timestamp":"2026-11-20T10:00:00Z","method":"ping","error_message":"bad \x"}]}`,
	"{\"items\":[{\"timestamp\":\"2026-11-20T10:00:00Z\",\"method\":\"ping\",\"error_message\":\"\\n\xc3\"}]}",
	`{"items":[{"timestamp":"2026-11-20T10:00:00Z","method":"ping","attributes":{"k\n":"v"}}]}`,
}
