package mcpgo

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpscope/telemetry/client"
)

func TestErrorType(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{&jsonrpc.Error{Code: -32602, Message: "unknown tool"}, "-32602"},
		{fmt.Errorf("wrapped: %w", &jsonrpc.Error{Code: -32002}), "-32002"},
		{&fs.PathError{Op: "open", Path: "x", Err: fs.ErrNotExist}, "PathError"},
		{errors.New("plain"), "Error"},
		{fmt.Errorf("wrapped: %w", errors.New("plain")), "Error"},
	} {
		if got := errorType(c.err); got != c.want {
			t.Errorf("errorType(%T) = %q, want %q", c.err, got, c.want)
		}
	}
}

func TestInstrumentNeedsAKey(t *testing.T) {
	t.Setenv(EnvKey, "")
	server := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	if _, err := Instrument(server, Options{}); err == nil {
		t.Fatal("no key: want an error")
	}
	t.Setenv(EnvKey, "ik_from_env")
	tel, err := Instrument(server, Options{Client: client.Options{Endpoint: "http://127.0.0.1:1"}})
	if err != nil {
		t.Fatalf("key from %s: %v", EnvKey, err)
	}
	_ = tel.Close(t.Context())
}

// The server's version is read from an unexported field of mcp.Server (the
// SDK has no accessor, and the 2026-07-28 handshake no initialize result):
// this fails when an SDK release renames it.
func TestImplVersionReadable(t *testing.T) {
	server := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "4.2.0"}, nil)
	if v := implVersion(server); v != "4.2.0" {
		t.Fatalf("implVersion = %q, want 4.2.0: the go-sdk release changed mcp.Server's impl field", v)
	}
}
