package chdb_test

import (
	"os"
	"strings"
	"testing"

	"github.com/mcpscope/telemetry/internal/testkit/chdb"
)

func TestVersion(t *testing.T) {
	lib := os.Getenv("TELEMETRY_TEST_LIBCHDB")
	if lib == "" {
		t.Skip("TELEMETRY_TEST_LIBCHDB names no libchdb.so (scripts/chdb.sh installs it)")
	}
	s, err := chdb.Open(lib, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	out, err := s.Query("SELECT version()", "TSV")
	if err != nil || !strings.HasPrefix(out, "26.") {
		t.Fatalf("version %q, %v", out, err)
	}
	if _, err := s.Query("SELECT nosuchfunction()", "TSV"); err == nil {
		t.Error("no error for an unknown function")
	}
	if _, err := s.Query("CREATE DATABASE IF NOT EXISTS x", "TSV"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Query("CREATE TABLE x.t (a UInt8, s String) ENGINE = MergeTree ORDER BY a", "TSV"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Query("INSERT INTO x.t (a, s) FORMAT TSV\n1\tx\\ty\n2\tz\n", "TSV"); err != nil {
		t.Fatal(err)
	}
	out, err = s.Query("SELECT a, s FROM x.t ORDER BY a", "TSV")
	if err != nil || out != "1\tx\\ty\n2\tz\n" {
		t.Fatalf("%q, %v", out, err)
	}
	t.Logf("ClickHouse %s", out)
}
