package mcpgo_test

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/client"
	"github.com/mcpscope/telemetry/internal/testkit/weather"
	"github.com/mcpscope/telemetry/mcpgo"
	"github.com/mcpscope/telemetry/mcpgo/internal/scenario"
)

// A real go-sdk server and client: a misspelled tool, arguments the schema
// refuses (a wrong type, a number over the maximum), a handler that
// returns an error, an isError result, a 100 KB answer and the same call
// five times, under both protocols. Every tools/call item is checked.
func TestAgentFailures(t *testing.T) {
	for _, protocol := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(protocol, func(t *testing.T) {
			in := scenario.NewIngest(t)
			server := weather.NewServer()
			tel, err := mcpgo.Instrument(server, mcpgo.Options{Client: client.Options{Endpoint: in.URL, Key: "ik_test", FlushInterval: time.Hour}})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			st, ct := mcp.NewInMemoryTransports()
			if _, err := server.Connect(ctx, st, nil); err != nil {
				t.Fatal(err)
			}
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1.0.0"}, nil).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: protocol})
			if err != nil {
				t.Fatal(err)
			}
			results, err := weather.Run(ctx, cs)
			if err != nil {
				t.Fatal(err)
			}
			_ = cs.Close()
			var calls, misses []analytics.Item
			for _, it := range scenario.Close(t, tel, in) {
				switch it.Method {
				case "tools/call":
					calls = append(calls, it)
				case "prompts/get", "resources/read":
					misses = append(misses, it)
				}
			}
			if len(misses) != 2 || misses[0].Name != "sumary" || misses[1].Name != "weather://station" ||
				misses[0].ErrorKind != analytics.ErrorKindUnknownTool || misses[1].ErrorKind != analytics.ErrorKindUnknownTool {
				t.Errorf("misses %+v, want prompts/get sumary and resources/read weather://station as unknown_tool", misses)
			}
			if len(calls) != 13 {
				t.Fatalf("%d tools/call items, want 13", len(calls))
			}
			// The size of the result as the handler returned it: under
			// 2026-07-28 the SDK adds its serverInfo _meta after the
			// middleware has run.
			size := func(r *mcp.CallToolResult) int64 {
				c := *r
				if protocol == "2026-07-28" {
					c.Meta = nil
				}
				b, err := json.Marshal(&c)
				if err != nil {
					t.Fatal(err)
				}
				return int64(len(b))
			}
			hex32 := regexp.MustCompile(`^[0-9a-f]{32}$`)
			type want struct {
				name, status, kind, message string
				size                        int64 // -1: none
			}
			wants := []want{
				{"get_forcast", "error", "unknown_tool", `unknown tool "get_forcast"`, -1},
				{"get_forecast", "error", "invalid_params", "", size(results[1])},
				{"get_forecast", "error", "invalid_params", "", size(results[2])},
				{"explode", "error", "exception", "weather backend exploded", size(results[3])},
				{"refuse", "error", "tool_error", "no data for that region", size(results[4])},
				{"big_report", "ok", "", "", size(results[5])},
			}
			for i := 6; i <= 12; i++ {
				wants = append(wants, want{"get_forecast", "ok", "", "", size(results[i])})
			}
			for i, w := range wants {
				it := calls[i]
				got := -1
				if it.ResponseBytes != nil {
					got = int(*it.ResponseBytes)
				}
				if it.Name != w.name || it.Status != w.status || it.ErrorKind != w.kind || int64(got) != w.size ||
					(w.message != "" && it.ErrorMessage != w.message) || !hex32.MatchString(it.ArgsHash) {
					t.Errorf("call %d: %s %s kind %q size %d hash %q message %q; want %+v", i, it.Name, it.Status, it.ErrorKind, got, it.ArgsHash, it.ErrorMessage, w)
				}
			}
			if *calls[5].ResponseBytes <= int64(len(weather.Big)) {
				t.Errorf("big answer %d bytes", *calls[5].ResponseBytes)
			}
			// The refusals say which property and rule, never the values
			// (go-sdk's validator quotes them: "type: seven has type ...",
			// "maximum: 99/1 is greater than ...").
			const prefix = `validating "arguments": validating root: validating /properties/days: `
			for i, want := range map[int]string{
				1: prefix + `type: <value> has type "string", want "integer"`,
				2: prefix + "maximum: <value> is greater than 7.000000",
			} {
				if calls[i].ErrorMessage != want {
					t.Errorf("refusal %d: %q, want %q", i, calls[i].ErrorMessage, want)
				}
			}
			// Loops: the same arguments hash equal (key order does not
			// count), other ones differ; no value is sent.
			h := calls[6].ArgsHash
			for i := 6; i <= 11; i++ {
				if calls[i].ArgsHash != h {
					t.Errorf("call %d: args_hash %s, want %s", i, calls[i].ArgsHash, h)
				}
			}
			if calls[0].ArgsHash != h || calls[12].ArgsHash == h || calls[1].ArgsHash == calls[2].ArgsHash || calls[3].ArgsHash != calls[4].ArgsHash {
				t.Errorf("args_hash: %v", []string{calls[0].ArgsHash, calls[1].ArgsHash, calls[2].ArgsHash, calls[12].ArgsHash})
			}
			wire, _ := json.Marshal(calls)
			for _, v := range []string{"Paris", "Lyon", "Atlantis", "seven"} {
				if strings.Contains(string(wire), v) {
					t.Errorf("argument value %q sent", v)
				}
			}
		})
	}
}

// ArgsHash is keyed: another key, another hash; the same key and
// arguments in any key order, the same hash.
func TestArgsHashKeyed(t *testing.T) {
	a := mcpgo.ArgsHash([]byte("k1"), json.RawMessage(`{"b":1,"a":[1,{"d":true,"c":null}]}`))
	if a != mcpgo.ArgsHash([]byte("k1"), json.RawMessage(`{"a":[1,{"c":null,"d":true}],"b":1}`)) ||
		a == mcpgo.ArgsHash([]byte("k2"), json.RawMessage(`{"b":1,"a":[1,{"d":true,"c":null}]}`)) ||
		mcpgo.ArgsHash(nil, nil) != mcpgo.ArgsHash(nil, json.RawMessage(`{}`)) || len(a) != mcpgo.ArgsHashLen {
		t.Errorf("hash %s", a)
	}
}

// A call the client cancels: go-sdk cancels the handler's context, the
// handler returns its error, and the item is of kind cancelled.
func TestAgentCancels(t *testing.T) {
	in := scenario.NewIngest(t)
	server := mcp.NewServer(&mcp.Implementation{Name: "slow", Version: "1.0.0"}, nil)
	started := make(chan struct{})
	mcp.AddTool(server, &mcp.Tool{Name: "slow_report"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		close(started)
		<-ctx.Done()
		return nil, nil, ctx.Err()
	})
	tel, err := mcpgo.Instrument(server, mcpgo.Options{Client: client.Options{Endpoint: in.URL, Key: "ik_test", FlushInterval: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1.0.0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	callCtx, cancel := context.WithCancel(ctx)
	go func() {
		<-started
		cancel()
	}()
	if _, err := cs.CallTool(callCtx, &mcp.CallToolParams{Name: "slow_report", Arguments: map[string]any{}}); err == nil {
		t.Fatal("the cancelled call succeeded")
	}
	var call *analytics.Item
	deadline := time.Now().Add(5 * time.Second)
	for call == nil && time.Now().Before(deadline) {
		_ = tel.Flush(ctx)
		for _, it := range in.Items() {
			if it.Method == "tools/call" {
				call = &it
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	_ = cs.Close()
	ss.Wait()
	scenario.Close(t, tel, in)
	if call == nil || call.Status != analytics.StatusError || call.ErrorKind != analytics.ErrorKindCancelled {
		t.Fatalf("cancelled call recorded as %+v", call)
	}
}
