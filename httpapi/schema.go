package httpapi

import (
	"reflect"
)

// documentSchema describes the OpenAPI schema of a domain type and its
// fields. Domain types carry JSON tags only (the domain packages know
// nothing of OpenAPI), so their descriptions are attached here, next to the
// routes that return them. A field name that the type does not have panics
// at start-up, so the documentation cannot drift from the type silently.
func (s *Server) documentSchema(v any, doc string, fields map[string]string) {
	reg := s.api.OpenAPI().Components.Schemas
	ref := reg.Schema(reflect.TypeOf(v), true, "")
	sch := ref
	if ref.Ref != "" {
		sch = reg.SchemaFromRef(ref.Ref)
	}
	sch.Description = doc
	for name, d := range fields {
		p, ok := sch.Properties[name]
		if !ok {
			panic("httpapi: documentSchema: " + reflect.TypeOf(v).String() + " has no field " + name)
		}
		p.Description = d
	}
}
