package mcpgo_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

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

// Streamable HTTP: a stateful server's items carry its Mcp-Session-Id; a
// stateless one's 34 tool calls from 2 clients make 2 sessions (one per
// client identity), not 34.
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
			if len(calls) != 2 {
				t.Fatalf("tool calls in sessions %v, want 2 sessions", calls)
			}
			for _, it := range items {
				if it.Method == "server/discover" && it.SessionID != mcpgo.StatelessSessionID("", it.ClientName, it.ClientVersion) {
					t.Fatalf("discover item in session %q of client %q", it.SessionID, it.ClientName)
				}
				if it.Method != "tools/call" {
					continue
				}
				if stateless && it.SessionID != mcpgo.StatelessSessionID("", it.ClientName, it.ClientVersion) {
					t.Fatalf("stateless item in session %q of client %q", it.SessionID, it.ClientName)
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
