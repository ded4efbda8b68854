package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// redactionPatterns are the worst custom patterns validation accepts that
// the benchmark knows: one whose failed attempts read to the end of the
// string (quadratic under ReplaceAll) and one that keeps ~40 threads
// alive per byte.
var redactionPatterns = []string{`a[^Z]*Z|a`, `(?:a|b|c|d|e|f|g|h|i|j)[^Z]{0,40}Z`}

// runRedaction measures what redaction costs the service per MiB of
// payload: payloads of about 1 MiB shaped against redactionPatterns and
// the built-in patterns, posted with the MCP's redaction off, on with the
// built-in patterns only, and on with redactionPatterns too; the figure is
// the service's CPU time per MiB of payload (from /proc), with the
// answers' statuses (over its budget a payload is refused, 422).
func runRedaction(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("bench redaction", flag.ContinueOnError)
	endpoint := fs.String("endpoint", "http://127.0.0.1:8080", "service base address")
	token := fs.String("token", "", "session token of the account owning -mcp")
	mcp := fs.String("mcp", "", "id of the MCP whose redaction is set")
	key := fs.String("key", "", "an ingest key of -mcp")
	pid := fs.Int("pid", 0, "the service's process id, for its CPU time")
	n := fs.Int("n", 10, "payloads of each shape")
	outPath := fs.String("out", "", "append the figures to this results file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *token == "" || *mcp == "" || *key == "" || *pid == 0 {
		return errors.New("-token, -mcp, -key and -pid are required")
	}
	base := strings.TrimRight(*endpoint, "/")
	setRedaction := func(on bool, patterns []string) error {
		return patchRedaction(ctx, base, *mcp, *token, on, patterns)
	}
	shapes := []struct{ name, text string }{
		{"run of a's", strings.Repeat("a", 4000)},
		{"digits and spaces", strings.Repeat("4 ", 2000)},
		{"ordinary text", strings.Repeat("upstream timed out calling https://api.example.com/v1/search for Zed ", 50)},
	}
	cpu := func() (time.Duration, error) { return processCPU(*pid) }
	var figs []figure
	worst := 0.0
	for _, mode := range []struct {
		label    string
		on       bool
		patterns []string
	}{{"redaction off", false, []string{}}, {"built-ins only", true, []string{}}, {"worst patterns", true, redactionPatterns}} {
		if err := setRedaction(mode.on, mode.patterns); err != nil {
			return err
		}
		for _, sh := range shapes {
			body := redactionBody(sh.text)
			c0, err := cpu()
			if err != nil {
				return err
			}
			statuses, err := postN(ctx, base+"/v1/ingest", *key, body, *n)
			if err != nil {
				return err
			}
			c1, err := cpu()
			if err != nil {
				return err
			}
			perMiB := (c1 - c0).Seconds() * 1000 / float64(*n) / (float64(len(body)) / (1 << 20))
			label := mode.label
			if mode.on {
				worst = max(worst, perMiB)
			}
			fmt.Fprintf(out, "%-14s %-17s: service CPU %.0f ms per MiB of payload; answers %v\n", label, sh.name, perMiB, statuses)
			figs = append(figs, figure{"redaction", label + ", " + sh.name, "cpu_ms_per_mib", perMiB})
		}
	}
	fmt.Fprintf(out, "redaction worst case: %.0f ms of service CPU per MiB of payload (decoding included; the budget is 40 ms per MiB)\n", worst)
	figs = append(figs, figure{"redaction", "worst case", "cpu_ms_per_mib", worst})
	if err := setRedaction(false, []string{}); err != nil {
		return err
	}
	return recorder{*outPath}.record(figs...)
}

// patchRedaction sets the redaction of the MCP mcp, then waits for the
// service's key cache to expire (auth.key_cache_ttl).
func patchRedaction(ctx context.Context, base, mcp, token string, on bool, patterns []string) error {
	body, _ := json.Marshal(map[string]any{"redaction": map[string]any{"enabled": on, "patterns": patterns}})
	req, _ := http.NewRequestWithContext(ctx, "PATCH", base+"/v1/mcps/"+mcp, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 {
		return fmt.Errorf("PATCH redaction: %d %s", res.StatusCode, b)
	}
	time.Sleep(2500 * time.Millisecond) // auth.key_cache_ttl
	return nil
}

// processCPU is the CPU time (user and system) of the process pid.
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond, nil // USER_HZ = 100
}

// redactionBody is an ingest body of 250 items whose error message is text.
func redactionBody(text string) []byte {
	now := time.Now().UTC().Add(-time.Minute).Format(time.RFC3339Nano)
	var items []map[string]any
	for i := 0; i < 250; i++ {
		items = append(items, map[string]any{"timestamp": now, "session_id": "s-red", "method": "tools/call", "name": "t",
			"error_message": text})
	}
	body, _ := json.Marshal(map[string]any{"items": items})
	return body
}

// postN posts body to url with the ingest key n times and counts the
// answers' statuses.
func postN(ctx context.Context, url, key string, body []byte, n int) (map[int]int, error) {
	statuses := map[int]int{}
	for i := 0; i < n; i++ {
		req, _ := http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		statuses[res.StatusCode]++
	}
	return statuses, nil
}
