package otlp

import _ "embed"

// MappingDoc is MAPPING.md: how spans become items, published in /docs.
//
//go:embed MAPPING.md
var MappingDoc string
