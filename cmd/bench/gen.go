package main

import (
	"crypto/sha256"
	"encoding/hex"
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/mcpscope/telemetry/analytics"
)

// tool is one synthetic tool: how often it is called relative to the
// others, its median latency and how often it fails.
type tool struct {
	name      string
	weight    float64
	medianMs  float64
	errorRate float64
}

// tools follow a Zipf-like popularity (weight 1/rank): a few tools take
// most calls, as on real MCP servers. Error rates average about 3% over
// calls.
var tools = func() []tool {
	names := []string{"search_docs", "read_file", "list_issues", "get_page", "run_query", "fetch_url",
		"create_issue", "summarize", "send_message", "list_files", "get_logs", "deploy"}
	medians := []float64{45, 12, 80, 150, 220, 300, 120, 900, 60, 15, 400, 2500}
	errs := []float64{0.02, 0.01, 0.03, 0.04, 0.05, 0.06, 0.03, 0.04, 0.02, 0.01, 0.05, 0.12}
	ts := make([]tool, len(names))
	for i := range names {
		ts[i] = tool{names[i], 1 / math.Pow(float64(i+1), 1.1), medians[i], errs[i]}
	}
	return ts
}()

// errorKinds are the error types items carry, with a message each.
var errorKinds = []struct{ typ, msg, kind string }{
	{"TimeoutError", "upstream timed out after 30s", analytics.ErrorKindTimeout},
	{"ValidationError", "invalid argument: query must not be empty", analytics.ErrorKindInvalidParams},
	{"RateLimitError", "upstream API rate limit exceeded (429)", analytics.ErrorKindToolError},
	{"NotFoundError", "resource not found", analytics.ErrorKindToolError},
	{"UpstreamError", "upstream returned 502 Bad Gateway", analytics.ErrorKindException},
}

// argSets is how many distinct argument sets each tool is called with
// (skewed: low numbers come back often); an item carries the set's
// args_hash, 32 hex characters as the SDKs make them (docs/failures.md).
const argSets = 2000

var clients = []struct {
	name, version string
	weight        float64
}{
	{"claude-desktop", "0.9.1", 30}, {"claude-desktop", "0.10.0", 15}, {"cursor", "1.2.3", 25},
	{"vscode", "1.101.0", 15}, {"windsurf", "1.9.0", 8}, {"zed", "0.190.2", 5}, {"cline", "3.17.0", 2},
}

var regions = []string{"eu", "us", "ap"}

// generator makes realistic telemetry items: sessions of about 20 calls
// (an initialize, then mostly tool calls), each session with one client
// and one user, several sessions interleaved as on a busy server.
// Deterministic for a given seed; not safe for concurrent use.
type generator struct {
	r         *rand.Rand
	toolCDF   []float64
	clientCDF []float64
	users     []string
	active    []session
	next      uint64
	prefix    string
}

type session struct {
	id      string
	client  int
	user    string
	left    int
	started bool
}

// newGenerator returns a generator whose session ids start with prefix
// (one per worker, so that workers never share a session).
func newGenerator(seed uint64, prefix string) *generator {
	g := &generator{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), prefix: prefix}
	g.toolCDF = cdf(len(tools), func(i int) float64 { return tools[i].weight })
	g.clientCDF = cdf(len(clients), func(i int) float64 { return clients[i].weight })
	g.users = make([]string, 5000)
	for i := range g.users {
		g.users[i] = "u-" + strconv.Itoa(i)
	}
	g.active = make([]session, 32)
	for i := range g.active {
		g.active[i] = g.newSession()
	}
	return g
}

func cdf(n int, weight func(int) float64) []float64 {
	c := make([]float64, n)
	sum := 0.0
	for i := range c {
		sum += weight(i)
		c[i] = sum
	}
	for i := range c {
		c[i] /= sum
	}
	return c
}

func pick(c []float64, x float64) int {
	for i, v := range c {
		if x < v {
			return i
		}
	}
	return len(c) - 1
}

func (g *generator) newSession() session {
	g.next++
	s := session{id: g.prefix + strconv.FormatUint(g.next, 36), client: pick(g.clientCDF, g.r.Float64()),
		left: 10 + g.r.IntN(21)} // 10..30 calls, 20 on average
	if g.r.IntN(10) != 0 { // a tenth of sessions carry no user id
		// Skewed: low user numbers come back often.
		s.user = g.users[int(float64(len(g.users))*math.Pow(g.r.Float64(), 2))]
	}
	return s
}

// item returns the next item, stamped at now minus up to 2 s (items reach
// the service a little after they happened).
func (g *generator) item(now time.Time) analytics.Item {
	k := g.r.IntN(len(g.active))
	s := &g.active[k]
	c := clients[s.client]
	it := analytics.Item{
		Timestamp: now.Add(-time.Duration(g.r.IntN(2000)) * time.Millisecond), SessionID: s.id,
		Status: analytics.StatusOK, ClientName: c.name, ClientVersion: c.version, ServerVersion: "1.4.0", UserID: s.user,
	}
	median, errRate := 3.0, 0.005
	switch x := g.r.IntN(100); {
	case !s.started:
		it.Method, s.started = "initialize", true
	case x < 85:
		tk := pick(g.toolCDF, g.r.Float64())
		t := tools[tk]
		it.Method, it.Name, median, errRate = analytics.MethodToolsCall, t.name, t.medianMs, t.errorRate
		// The failures columns (migration 009): the answer's size and the
		// arguments' hash.
		resp := int64(math.Round(2000 * math.Exp(1.2*g.r.NormFloat64())))
		it.ResponseBytes = &resp
		it.ArgsHash = argHashes[tk][int(argSets*math.Pow(g.r.Float64(), 3))]
	case x < 93:
		it.Method, it.Name, median = "resources/read", "file:///docs/page-"+strconv.Itoa(g.r.IntN(40))+".md", 8
	case x < 97:
		it.Method, it.Name, median = "prompts/get", []string{"summarize", "review", "explain"}[g.r.IntN(3)], 2
	default:
		it.Method = "tools/list"
	}
	if g.r.IntN(20) != 0 { // 5% of items carry no duration
		d := math.Round(median*math.Exp(0.9*g.r.NormFloat64())*10) / 10
		d = min(d, analytics.MaxDurationMs)
		it.DurationMs = &d
	}
	if g.r.Float64() < errRate {
		e := errorKinds[g.r.IntN(len(errorKinds))]
		it.Status, it.ErrorType, it.ErrorMessage, it.ErrorKind = analytics.StatusError, e.typ, e.msg, e.kind
	}
	if g.r.IntN(4) == 0 {
		it.Attributes = map[string]string{"region": regions[g.r.IntN(len(regions))]}
	}
	s.left--
	if s.left <= 0 {
		g.active[k] = g.newSession()
	}
	return it
}

// batch fills dst with n items.
func (g *generator) batch(dst []analytics.Item, n int, now time.Time) []analytics.Item {
	dst = dst[:0]
	for range n {
		dst = append(dst, g.item(now))
	}
	return dst
}

// argHashes stand for the SDK's keyed hashes of each tool's argument sets.
var argHashes = func() [][]string {
	out := make([][]string, len(tools))
	for i, t := range tools {
		out[i] = make([]string, argSets)
		for n := range out[i] {
			sum := sha256.Sum256([]byte(t.name + "/" + strconv.Itoa(n)))
			out[i][n] = hex.EncodeToString(sum[:16])
		}
	}
	return out
}()
