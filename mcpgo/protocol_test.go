package mcpgo_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpscope/telemetry/client"
	"github.com/mcpscope/telemetry/mcpgo"
	"github.com/mcpscope/telemetry/mcpgo/internal/scenario"
)

// Old and new protocol over one connection each: the new handshake is
// server/discover (no initialize), the old one initialize, whose
// notifications/initialized is not a request and is not recorded. Client,
// server and protocol versions are on every item.
func TestProtocols(t *testing.T) {
	for _, tc := range []struct {
		protocol, handshake string
	}{
		{"2026-07-28", "server/discover"},
		{"2025-11-25", "initialize"},
	} {
		t.Run(tc.protocol, func(t *testing.T) {
			in := scenario.NewIngest(t)
			server, tel := scenario.NewServer(t, in)
			scenario.InMemory(t, server, &mcp.ClientSessionOptions{ProtocolVersion: tc.protocol})
			s := scenario.Summarize(scenario.Close(t, tel, in))
			check(t, "methods", s.Methods, map[string]int{tc.handshake: 2, "tools/list": 2, "tools/call": 8})
			check(t, "clients", s.Clients, map[string]int{"client-0 0.3.1": 6, "client-1 0.3.1": 6})
			check(t, "protocol", s.Protocol, map[string]int{tc.protocol: 12})
			check(t, "server", s.Servers, map[string]int{scenario.ServerVersion: 12})
			check(t, "errors", s.Errors, map[string]string{"fail": mcpgo.ToolError})
			if len(s.Sessions) != 2 {
				t.Errorf("sessions %v, want one per connection", s.Sessions)
			}
		})
	}
}

// Streamable HTTP: a stateful server's items carry its Mcp-Session-Id (one
// per client: 34 tool calls from 2 clients make 2 sessions); a stateless
// one's carry none, and neither does server/discover over HTTP: the service
// derives those sessions (docs/sessions.md; read back through the service
// by TestGoSDKStatelessSessions in cmd/telemetryd).
func TestStreamableHTTPSessions(t *testing.T) {
	for _, stateless := range []bool{false, true} {
		t.Run(fmt.Sprint("stateless=", stateless), func(t *testing.T) {
			in := scenario.NewIngest(t)
			server, tel := scenario.NewServer(t, in)
			scenario.StreamableHTTP(t, server, stateless)
			items := scenario.Close(t, tel, in)
			s := scenario.Summarize(items)
			if s.Methods["tools/call"] != 34 {
				t.Fatalf("methods %v, want 34 tools/call", s.Methods)
			}
			t.Logf("methods %v", s.Methods)
			calls := map[string]int{}
			for _, it := range items {
				if it.Method == "tools/call" {
					calls[it.SessionID]++
				}
			}
			want := 2
			if stateless {
				want = 1 // all of them without a session_id
			}
			if len(calls) != want {
				t.Fatalf("tool calls in sessions %v, want %d", calls, want)
			}
			for _, it := range items {
				if it.Method == "server/discover" && it.SessionID != "" {
					t.Fatalf("discover item in session %q of client %q, want none", it.SessionID, it.ClientName)
				}
				if it.Method != "tools/call" {
					continue
				}
				if stateless != (it.SessionID == "") {
					t.Fatalf("stateless=%v: item in session %q of client %q", stateless, it.SessionID, it.ClientName)
				}
				if it.ServerVersion != scenario.ServerVersion || it.ProtocolVersion == "" {
					t.Fatalf("item %+v: want server and protocol versions", it)
				}
			}
		})
	}
}

func check[M any](t *testing.T, what string, got, want M) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

// A stdio server exits promptly once its client closes, though its
// telemetry endpoint is unreachable: Close gives up after the shutdown
// deadline (2 s by default) instead of retrying for several seconds.
func TestStdioServerExitsPromptly(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperStdioServer$")
	cmd.Env = append(os.Environ(), "MCPGO_STDIO_HELPER=1")
	cmd.Stderr = os.Stderr
	ctx := context.Background()
	c := mcp.NewClient(&mcp.Implementation{Name: "stdio-client", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	scenario.Drive(t, cs, 3)
	start := time.Now()
	_ = cs.Close()
	if err := cmd.Wait(); err != nil && !strings.Contains(err.Error(), "already") {
		t.Logf("wait: %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("the stdio server took %v to exit after its client closed", d)
	} else {
		t.Logf("the stdio server exited %v after its client closed", d.Round(time.Millisecond))
	}
	if cmd.ProcessState == nil || !cmd.ProcessState.Exited() || cmd.ProcessState.ExitCode() != 0 {
		t.Fatalf("server process state %v, want it exited by itself with 0", cmd.ProcessState)
	}
}

// TestHelperStdioServer is the server process of TestStdioServerExitsPromptly.
func TestHelperStdioServer(t *testing.T) {
	if os.Getenv("MCPGO_STDIO_HELPER") != "1" {
		t.Skip("helper process")
	}
	in := &scenario.Ingest{URL: "http://127.0.0.1:1"} // nothing listens there
	server, tel := scenario.NewServer(t, in)
	_ = server.Run(context.Background(), &mcp.StdioTransport{})
	_ = tel.Close(context.Background())
	os.Exit(0)
}

// Each distinct tools/list answer is reported to the inventory endpoint
// once, with the hash of every tool as the client received it.
func TestInventoryReported(t *testing.T) {
	in := scenario.NewIngest(t)
	server, tel := scenario.NewServer(t, in)
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	if _, err := server.Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	waitFor := func(n int) []client.Inventory {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if inv := in.Inventory(); len(inv) >= n {
				return inv
			}
		}
		t.Fatalf("%d inventory posts, want %d", len(in.Inventory()), n)
		return nil
	}
	first, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(1)
	if _, err := cs.ListTools(ctx, nil); err != nil { // the same list
		t.Fatal(err)
	}
	mcp.AddTool(server, &mcp.Tool{Name: "added", Description: "a new tool"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	inv := waitFor(2)
	_ = cs.Close()
	_ = tel.Close(ctx)
	if len(in.Inventory()) != 2 {
		t.Fatalf("%d inventory posts, want 2 (the repeated list is not reported again)", len(in.Inventory()))
	}
	if inv[0].ServerVersion != scenario.ServerVersion || inv[0].ProtocolVersion == "" {
		t.Fatalf("inventory %+v: want server and protocol versions", inv[0])
	}
	want := map[string]string{}
	for _, tool := range first.Tools {
		raw, _ := json.Marshal(tool)
		var all map[string]any
		_ = json.Unmarshal(raw, &all)
		part := map[string]any{}
		for _, k := range []string{"description", "inputSchema", "annotations"} {
			if v, ok := all[k]; ok {
				part[k] = v
			}
		}
		want[tool.Name] = client.SchemaHash(part)
	}
	got := map[string]string{}
	for _, tool := range inv[0].Tools {
		got[tool.Name] = tool.SchemaHash
		// The definition goes with the hash by default: its description
		// and inputSchema are the hash's, outputSchema may be added.
		var def map[string]any
		if err := json.Unmarshal(tool.Schema, &def); err != nil || def["inputSchema"] == nil {
			t.Errorf("tool %s: definition %s (%v), want it sent by default", tool.Name, tool.Schema, err)
		}
	}
	check(t, "first list", got, want)
	// definition_bytes: the tool's JSON as listed, what an agent pays for it.
	wantSize, gotSize := map[string]int64{}, map[string]int64{}
	for _, tool := range first.Tools {
		raw, _ := json.Marshal(tool)
		wantSize[tool.Name] = int64(len(raw))
	}
	for _, tool := range inv[0].Tools {
		gotSize[tool.Name] = tool.DefinitionBytes
	}
	check(t, "definition bytes", gotSize, wantSize)
	if len(inv[1].Tools) != len(first.Tools)+1 {
		t.Fatalf("second list %+v, want the added tool too", inv[1].Tools)
	}
}

// The schema hash is the one the TypeScript SDK computes for the same tool
// (its test "tools/list answers are reported..." has the same vector).
func TestToolSchemaHash(t *testing.T) {
	var schema map[string]any
	_ = json.Unmarshal([]byte(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`), &schema)
	if got := client.SchemaHash(map[string]any{"description": "search the docs", "inputSchema": schema}); got != "67fa58c78bd7194b462d63c679324ff1fe415c1d697166e65dc00ff2f438670f" {
		t.Fatalf("hash %s", got)
	}
	if got := string(client.CanonicalJSON(map[string]any{"b": []any{1.0, map[string]any{"d": 2.0, "a": "<&>"}}, "a": nil})); got != `{"a":null,"b":[1,{"a":"<&>","d":2}]}` {
		t.Fatalf("canonical JSON %s", got)
	}
}
