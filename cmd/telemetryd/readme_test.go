package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/internal/testkit/testenv"
)

// readmeWalkthrough returns the shell blocks of the README's "A first
// walk-through" section, in order.
func readmeWalkthrough(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	start := strings.Index(text, "\n## A first walk-through")
	if start < 0 {
		t.Fatal(`README.md has no "## A first walk-through" section`)
	}
	section := text[start+1:]
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	var blocks []string
	for {
		i := strings.Index(section, "```sh\n")
		if i < 0 {
			break
		}
		section = section[i+len("```sh\n"):]
		j := strings.Index(section, "```")
		if j < 0 {
			t.Fatal("README.md: a shell block of the walk-through is not closed")
		}
		blocks = append(blocks, section[:j])
		section = section[j+3:]
	}
	return blocks
}

// The README's walk-through runs as written (curl and jq, against a fresh
// service) and answers what its comments say: the batch accepted, its
// figures read back, the rule firing into the inbox, its history.
func TestReadmeWalkthrough(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"bash", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			msg := fmt.Sprintf("the README's walk-through needs %s (make run and make test install it)", tool)
			if testenv.InCI() {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
	blocks := readmeWalkthrough(t)
	if len(blocks) < 4 {
		t.Fatalf("the walk-through has %d shell blocks; the test expects signup, MCP and key, ingest, reads and a rule", len(blocks))
	}
	cfg := testConfig(t, testenv.ClickHouseAddr(t))
	_, base := startMain(t, cfg)
	// Each block is what a reader pastes in turn; the pause stands for the
	// reader (items are readable within 5 seconds, flushed every 200 ms here).
	script := strings.Join(blocks, "\nsleep 1\n")
	script = strings.Replace(script, "B=http://127.0.0.1:8080", "B="+base, 1)
	script = strings.Replace(script, "ada@example.com", fmt.Sprintf("ada-%d@example.com", time.Now().UnixNano()), 1)
	if !strings.Contains(script, "B="+base) {
		t.Fatal("the walk-through no longer sets B=http://127.0.0.1:8080, the address the test replaces")
	}
	out, err := exec.Command("bash", "-e", "-o", "pipefail", "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("the walk-through failed: %v\n%s", err, out)
	}
	for _, want := range []string{
		`{"accepted":2,"dropped":0}`,                       // the batch
		`"calls":2,"errors":1,"error_rate":0.5`,            // the overview
		`"value":"TimeoutError"`,                           // the breakdown by error type
		`"session_id":"s-1"`,                               // the timeline
		`"state":"firing","value":0.5,"fired":true`,        // the rule, evaluated now
		`"title":"Firing: Search errors (error rate 50%)"`, // the inbox
		`"kind":"fired"`,                                   // the rule's history
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the walk-through's output lacks %s:\n%s", want, out)
		}
	}
}
