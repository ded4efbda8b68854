package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// runSetup creates what the benchmarks need through the public API, as a
// new user would: an account (signup, or login when the email exists), an
// MCP that receives the load, an MCP whose id the seeded history uses, and
// ingest keys. It prints shell assignments for scripts/bench.sh to eval.
func runSetup(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("bench setup", flag.ContinueOnError)
	endpoint := fs.String("endpoint", "http://127.0.0.1:8080", "service base address")
	email := fs.String("email", "bench@example.com", "account email")
	password := fs.String("password", "bench-password-1", "account password (>= 10 characters)")
	keys := fs.Int("keys", 1, "ingest keys to create for the load MCP")
	if err := fs.Parse(args); err != nil {
		return err
	}
	api := &apiClient{base: strings.TrimRight(*endpoint, "/"), hc: &http.Client{Timeout: 30 * time.Second}}
	var auth struct {
		Token   string `json:"token"`
		Account struct {
			ID string `json:"id"`
		} `json:"account"`
	}
	status, err := api.do(ctx, "POST", "/v1/auth/signup", map[string]string{"email": *email, "password": *password, "name": "Bench"}, &auth, 201, 409)
	if err != nil {
		return err
	}
	if status == 409 {
		if _, err := api.do(ctx, "POST", "/v1/auth/login", map[string]string{"email": *email, "password": *password}, &auth, 200); err != nil {
			return err
		}
	}
	api.token = auth.Token
	mcp := func(name string) (string, error) {
		var m struct {
			ID string `json:"id"`
		}
		_, err := api.do(ctx, "POST", "/v1/mcps", map[string]string{"name": name}, &m, 201)
		return m.ID, err
	}
	loadMCP, err := mcp(fmt.Sprintf("bench-load-%d", time.Now().Unix()))
	if err != nil {
		return err
	}
	historyMCP, err := mcp(fmt.Sprintf("bench-history-%d", time.Now().Unix()))
	if err != nil {
		return err
	}
	var ks []string
	for i := range *keys {
		var k struct {
			Key string `json:"key"`
		}
		if _, err := api.do(ctx, "POST", "/v1/mcps/"+loadMCP+"/keys", map[string]string{"name": fmt.Sprintf("bench-%d", i)}, &k, 201); err != nil {
			return err
		}
		ks = append(ks, k.Key)
	}
	fmt.Fprintf(out, "BENCH_TOKEN=%s\nBENCH_ACCOUNT=%s\nBENCH_LOAD_MCP=%s\nBENCH_HISTORY_MCP=%s\nBENCH_KEYS=%s\n",
		auth.Token, auth.Account.ID, loadMCP, historyMCP, strings.Join(ks, ","))
	return nil
}

// apiClient calls the service's JSON API with a session token.
type apiClient struct {
	base  string
	token string
	hc    *http.Client
}

// do sends body as JSON and decodes the answer into v when its status is
// one of ok; any other status is an error carrying the problem document.
func (a *apiClient) do(ctx context.Context, method, path string, body, v any, ok ...int) (int, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, rd)
	if err != nil {
		return 0, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if a.token != "" {
		req.Header.Set("Authorization", "Bearer "+a.token)
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, err
	}
	for _, s := range ok {
		if resp.StatusCode == s {
			if v != nil && resp.StatusCode/100 == 2 {
				if err := json.Unmarshal(data, v); err != nil {
					return s, fmt.Errorf("%s %s: %w", method, path, err)
				}
			}
			return s, nil
		}
	}
	return resp.StatusCode, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, bytes.TrimSpace(data))
}
