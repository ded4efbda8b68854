package clickhouse

import (
	"strings"
	"testing"
)

// TestCanonicalUUID checks which ids go to id_uuid (migration 013): only
// those toString(UUID) writes back the same, so that EventID reads every
// id as it came.
func TestCanonicalUUID(t *testing.T) {
	t.Parallel()
	for id, want := range map[string]bool{
		"0f8fad5b-d9cb-469f-a165-70867728950e":          true,
		"0F8FAD5B-D9CB-469F-A165-70867728950E":          false, // upper case reads back lower
		"{0f8fad5b-d9cb-469f-a165-70867728950e}":        false,
		"0f8fad5bd9cb469fa16570867728950e":              false,
		"urn:uuid:0f8fad5b-d9cb-469f-a165-70867728950e": false,
		"00000000-0000-0000-0000-000000000000":          false, // the zero UUID marks "see id"
		"0f8fad5b-d9cb-469f-a165-70867728950g":          false,
		"0f8fad5b+d9cb-469f-a165-70867728950e":          false,
		"":                                              false,
		"h1":                                            false,
	} {
		u, ok := canonicalUUID(id)
		if ok != want {
			t.Errorf("canonicalUUID(%q) = %v, want %v", id, ok, want)
		}
		if ok && u.String() != id {
			t.Errorf("canonicalUUID(%q) = %s", id, u)
		}
	}
}

// TestDescendingKeepsExpressions checks that the reverse of the timeline's
// order keeps EventID (commas inside parentheses) whole.
func TestDescendingKeepsExpressions(t *testing.T) {
	t.Parallel()
	got := descending(timelineOrder)
	if !strings.Contains(got, EventID+" DESC") {
		t.Fatalf("EventID cut apart: %s", got)
	}
	if n, want := strings.Count(got, " DESC"), len(splitTopLevel(timelineOrder)); n != want || want < 10 {
		t.Fatalf("%d DESC for %d columns: %s", n, want, got)
	}
}
