// The last release of the official Go MCP SDK that speaks only the old
// protocol (initialize, no server/discover), for mcpgo's compatibility
// test. The main module stays at the release in its own go.mod.
module github.com/mcpscope/telemetry/mcpgo/compat

go 1.26.8

require (
	github.com/mcpscope/telemetry v0.0.0
	github.com/modelcontextprotocol/go-sdk v1.8.0
)

require (
	github.com/google/jsonschema-go v0.4.3 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/segmentio/asm v1.2.1 // indirect
	github.com/segmentio/encoding v0.5.4 // indirect
	github.com/yosida95/uritemplate/v3 v3.0.2 // indirect
	golang.org/x/oauth2 v0.37.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)

replace github.com/mcpscope/telemetry => ../..

replace github.com/modelcontextprotocol/go-sdk => github.com/modelcontextprotocol/go-sdk v1.6.1
