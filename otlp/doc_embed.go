package otlp

import (
	_ "embed"
	"strings"
)

// MappingDoc is MAPPING.md: how spans become items, published in /docs.
//
//go:embed MAPPING.md
var MappingDoc string

// MetricsMappingDoc is the "Metrics" section of MAPPING.md: how
// mcp.server.operation.duration points become items, published in /docs
// with POST /v1/otlp/v1/metrics.
var MetricsMappingDoc = section(MappingDoc, "## Metrics")

// section returns the part of a Markdown document from the heading line
// heading to the next heading of the same level ("" when absent).
func section(doc, heading string) string {
	i := strings.Index(doc, "\n"+heading+"\n")
	if i < 0 {
		return ""
	}
	rest := doc[i+1:]
	if j := strings.Index(rest[len(heading):], "\n## "); j >= 0 {
		return rest[:len(heading)+j+1]
	}
	return rest
}
