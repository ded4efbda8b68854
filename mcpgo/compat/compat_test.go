// Package compat tests package mcpgo against the last release of the Go
// MCP SDK before the 2026-07-28 protocol (see go.mod): initialize
// handshake, client and server versions from it, notifications not
// recorded, sessions per connection or per Mcp-Session-Id, and stateless
// HTTP traffic in one session per client identity.
package compat

import (
	"fmt"
	"testing"

	"github.com/mcpscope/telemetry/mcpgo"
	"github.com/mcpscope/telemetry/mcpgo/internal/scenario"
)

func TestOldProtocolInMemory(t *testing.T) {
	in := scenario.NewIngest(t)
	server, tel := scenario.NewServer(t, in)
	scenario.InMemory(t, server, nil)
	s := scenario.Summarize(scenario.Close(t, tel, in))
	want := func(what string, got, want any) {
		t.Helper()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	want("methods", s.Methods, map[string]int{"initialize": 2, "tools/list": 2, "tools/call": 8})
	want("clients", s.Clients, map[string]int{"client-0 0.3.1": 6, "client-1 0.3.1": 6})
	want("protocol", s.Protocol, map[string]int{"2025-11-25": 12})
	want("server", s.Servers, map[string]int{scenario.ServerVersion: 12})
	want("errors", s.Errors, map[string]string{"fail": mcpgo.ToolError})
	want("sessions", len(s.Sessions), 2)
}

func TestOldProtocolStreamableHTTP(t *testing.T) {
	for _, stateless := range []bool{false, true} {
		t.Run(fmt.Sprint("stateless=", stateless), func(t *testing.T) {
			in := scenario.NewIngest(t)
			server, tel := scenario.NewServer(t, in)
			scenario.StreamableHTTP(t, server, stateless)
			items := scenario.Close(t, tel, in)
			s := scenario.Summarize(items)
			if s.Methods["tools/call"] != 34 || s.Methods["notifications/initialized"] != 0 {
				t.Fatalf("methods %v, want 34 tools/call and no notification", s.Methods)
			}
			if s.Servers[scenario.ServerVersion] != len(items) {
				t.Fatalf("server versions %v", s.Servers)
			}
			// This release keeps the Mcp-Session-Id of the initialize
			// answer in stateless mode too: one session per client.
			if len(s.Sessions) != 2 {
				t.Fatalf("sessions %v, want 2", s.Sessions)
			}
		})
	}
}
