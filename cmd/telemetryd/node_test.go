package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mcpscope/telemetry/internal/testkit/testenv"
)

// The Node test suites run against this service, started in-process on the
// test databases: the TypeScript SDK's own tests (sdk/typescript) and the
// end-to-end tests of real MCP instrumentation packages (e2e/node). Each
// suite creates its MCPs with the session token it is given and asserts
// every figure it reads back; this test fails when any of its tests fails.
// Node is required under CI=true; elsewhere the suites are skipped without
// it. Dependencies are installed from each package-lock.json when
// node_modules is missing, with the npm cache under .data/.

func TestTypeScriptSDK(t *testing.T) {
	t.Parallel()
	runNodeSuite(t, "sdk/typescript", "test/*.test.js")
}

func TestInstrumentationPackagesEndToEnd(t *testing.T) {
	t.Parallel()
	runNodeSuite(t, "e2e/node", "*.test.js")
}

// npmMu keeps two installs from sharing the npm cache at once.
var npmMu sync.Mutex

// lookNode is the node binary; without one the test fails under CI and
// is skipped elsewhere.
func lookNode(t *testing.T) string {
	node, err := exec.LookPath("node")
	if err != nil {
		if testenv.InCI() {
			t.Fatal("node is not installed")
		}
		t.Skip("node is not installed")
	}
	return node
}

func runNodeSuite(t *testing.T, dir, pattern string) {
	node := lookNode(t)
	root := testenv.RepoRoot()
	pkg := filepath.Join(root, dir)
	npmInstall(t, root, pkg)
	files, err := filepath.Glob(filepath.Join(pkg, pattern))
	if err != nil || len(files) == 0 {
		t.Fatalf("no test files %s in %s", pattern, dir)
	}

	_, base := startMain(t, testConfig(t, testenv.ClickHouseAddr(t)))
	token, _, _ := api{t, base}.newTenant(strings.ReplaceAll(dir, "/", "-"))

	cmd := exec.Command(node, append([]string{"--test", "--test-reporter=spec"}, files...)...)
	cmd.Dir = pkg
	cmd.Env = append(os.Environ(), "TELEMETRY_TEST_BASE_URL="+base, "TELEMETRY_TEST_TOKEN="+token, "CI=true")
	out, err := cmd.CombinedOutput()
	t.Logf("node --test %s:\n%s", dir, out)
	if err != nil {
		t.Fatalf("node --test in %s: %v", dir, err)
	}
}

// npmInstall runs `npm ci` in pkg when its node_modules is missing.
func npmInstall(t *testing.T, root, pkg string) {
	if _, err := os.Stat(filepath.Join(pkg, "node_modules")); err == nil {
		return
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Fatal("npm is not installed")
	}
	npmMu.Lock()
	defer npmMu.Unlock()
	cmd := exec.Command(npm, "ci", "--no-audit", "--no-fund", "--cache", filepath.Join(root, ".data", "npm-cache"))
	cmd.Dir = pkg
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in %s: %v\n%s", pkg, err, out)
	}
}

// TestMCPEndpointTypeScriptClient drives /mcp with the official
// TypeScript MCP client (e2e/mcp-client).
func TestMCPEndpointTypeScriptClient(t *testing.T) {
	t.Parallel()
	runNodeSuite(t, "e2e/mcp-client", "*.test.js")
}
