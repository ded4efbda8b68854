package alerting

import (
	"bytes"
	"encoding/json"
	"time"
)

// Nullable is a JSON field that tells "absent" (Set false) from null (Set
// true, Value nil) and from a value of T. Use it with `json:",omitzero"`.
// The httpapi package describes each use to OpenAPI.
type Nullable[T any] struct {
	Set   bool
	Value *T
}

// NullableTime is a nullable RFC 3339 time; NullableString a nullable
// string.
type (
	NullableTime   = Nullable[time.Time]
	NullableString = Nullable[string]
)

// UnmarshalJSON records that the field was present.
func (n *Nullable[T]) UnmarshalJSON(b []byte) error {
	n.Set = true
	n.Value = nil
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		return nil
	}
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	n.Value = &v
	return nil
}

// MarshalJSON writes the value or null.
func (n Nullable[T]) MarshalJSON() ([]byte, error) {
	return json.Marshal(n.Value)
}

// IsZero reports an absent field, for omitzero.
func (n Nullable[T]) IsZero() bool { return !n.Set }

// NullableInt is NullableString for an integer.
type NullableInt struct {
	Set   bool
	Value *int
}

// UnmarshalJSON records that the field was present.
func (n *NullableInt) UnmarshalJSON(b []byte) error {
	n.Set, n.Value = true, nil
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		return nil
	}
	var v int
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	n.Value = &v
	return nil
}

// MarshalJSON writes the value or null.
func (n NullableInt) MarshalJSON() ([]byte, error) { return json.Marshal(n.Value) }

// IsZero reports an absent field, for omitzero.
func (n NullableInt) IsZero() bool { return !n.Set }

func cloneInt(p *int) *int {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
