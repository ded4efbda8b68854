package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/ingest/wire"
)

// request is one request the fake service received, its body decoded by the
// service's own batch parser.
type request struct {
	header http.Header
	items  []analytics.Item
}

// service is a stand-in for the ingest endpoint: it decodes every request
// like the real service does and answers from a script (then 202).
type service struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex
	reqs   []request
	script []func(w http.ResponseWriter) bool // true: answered, stop
	hook   func()                             // runs before answering, outside mu
}

func newService(t *testing.T) *service {
	s := &service{t: t}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *service) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/ingest" {
		http.Error(w, "wrong route "+r.Method+" "+r.URL.Path, http.StatusNotFound)
		return
	}
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		s.t.Errorf("read body: %v", err)
		return
	}
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			s.t.Errorf("body is not gzip: %v", err)
			return
		}
		if raw, err = io.ReadAll(zr); err != nil {
			s.t.Errorf("body is not gzip: %v", err)
			return
		}
	}
	if len(raw) > analytics.MaxBodyBytes {
		s.t.Errorf("body of %d bytes is over the service's limit", len(raw))
	}
	batch, err := wire.ParseBatch(raw, time.Now())
	if err != nil {
		s.t.Errorf("the service would refuse the body: %v\n%s", err, raw)
		return
	}
	if batch.Dropped > 0 {
		s.t.Errorf("the service would drop %d items of %s", batch.Dropped, raw)
	}
	if s.hook != nil {
		s.hook()
	}
	s.mu.Lock()
	s.reqs = append(s.reqs, request{header: r.Header.Clone(), items: batch.Items})
	var step func(http.ResponseWriter) bool
	if len(s.script) > 0 {
		step, s.script = s.script[0], s.script[1:]
	}
	s.mu.Unlock()
	if step != nil && step(w) {
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	fmt.Fprintf(w, `{"accepted":%d,"dropped":0}`, len(batch.Items))
}

func (s *service) requests() []request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]request(nil), s.reqs...)
}

func (s *service) items() []analytics.Item {
	var all []analytics.Item
	for _, r := range s.requests() {
		all = append(all, r.items...)
	}
	return all
}

// answer scripts one non-2xx answer: a problem document with the given
// code, and Retry-After when retryAfter is not empty.
func answer(status int, code, retryAfter string) func(http.ResponseWriter) bool {
	return func(w http.ResponseWriter) bool {
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"type":"about:blank","title":%q,"status":%d,"detail":"detail of %s","code":%q}`,
			http.StatusText(status), status, code, code)
		return true
	}
}

// newClient returns a client of s whose waits between attempts are recorded
// instead of slept.
func newClient(t *testing.T, s *service, opts Options) (*Client, *[]time.Duration) {
	t.Helper()
	opts.Endpoint = s.srv.URL
	if opts.Key == "" {
		opts.Key = "ik_test"
	}
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	waits := &[]time.Duration{}
	c.sleep = func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		defer mu.Unlock()
		*waits = append(*waits, d)
		return ctx.Err()
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c, waits
}

func item(i int) analytics.Item {
	d := float64(i) + 0.5
	return analytics.Item{
		Timestamp: time.Now().UTC().Add(-time.Duration(i) * time.Millisecond),
		SessionID: fmt.Sprintf("s-%d", i/20), Method: analytics.MethodToolsCall, Name: fmt.Sprintf("tool_%d", i%7),
		DurationMs: &d, Status: analytics.StatusOK, ClientName: "claude-desktop", UserID: fmt.Sprintf("u-%d", i%11),
	}
}

func TestAddBatchesAndCloseFlushes(t *testing.T) {
	s := newService(t)
	c, _ := newClient(t, s, Options{BatchSize: 500, FlushInterval: time.Hour})
	var want []analytics.Item
	for i := range 1200 {
		it := item(i)
		want = append(want, it)
		if err := c.Add(it); err != nil {
			t.Fatalf("Add %d: %v", i, err)
		}
	}
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	var sizes []int
	for _, r := range s.requests() {
		sizes = append(sizes, len(r.items))
		if got := r.header.Get("Authorization"); got != "Bearer ik_test" {
			t.Errorf("Authorization = %q", got)
		}
		if got := r.header.Get("Content-Type"); got != "application/json" {
			t.Errorf("Content-Type = %q", got)
		}
	}
	if !reflect.DeepEqual(sizes, []int{500, 500, 200}) {
		t.Fatalf("batch sizes = %v, want [500 500 200] (full batches, the rest on Close)", sizes)
	}
	got := s.items()
	ids := map[string]bool{}
	for i := range got {
		if got[i].ID == "" || ids[got[i].ID] {
			t.Fatalf("item %d id %q: want a unique id on every item", i, got[i].ID)
		}
		ids[got[i].ID] = true
		got[i].ID = ""
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("the service decoded different items (first: %+v, want %+v)", got[0], want[0])
	}
	if st := c.Stats(); st.Accepted != 1200 || st.Failed != 0 || st.Queued != 0 {
		t.Fatalf("stats = %+v", st)
	}
	if err := c.Add(item(0)); !errors.Is(err, ErrClosed) {
		t.Fatalf("Add after Close = %v, want ErrClosed", err)
	}
	if err := c.Flush(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Flush after Close = %v, want ErrClosed", err)
	}
}

func TestFlushSendsQueuedItems(t *testing.T) {
	s := newService(t)
	c, _ := newClient(t, s, Options{FlushInterval: time.Hour})
	for i := range 3 {
		if err := c.Add(item(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(s.items()); n != 3 {
		t.Fatalf("after Flush the service has %d items, want 3", n)
	}
}

func TestFlushIntervalSendsPartialBatch(t *testing.T) {
	s := newService(t)
	arrived := make(chan struct{}, 1)
	s.hook = func() { arrived <- struct{}{} }
	c, _ := newClient(t, s, Options{FlushInterval: 10 * time.Millisecond})
	if err := c.Add(item(0)); err != nil {
		t.Fatal(err)
	}
	<-arrived // no Flush: only the interval can send it
	if n := len(s.requests()); n != 1 {
		t.Fatalf("%d requests", n)
	}
}

func TestGzipBodyDecodesExactly(t *testing.T) {
	nan := math.NaN()
	zero := 0.0
	tricky := []analytics.Item{
		{Timestamp: time.Now().UTC().Truncate(time.Millisecond), SessionID: `s "quoted" \ back`, Method: "tools/call",
			Name: "naïve/工具/🚀", DurationMs: &zero, Status: analytics.StatusError, ErrorType: "TimeoutError",
			ErrorMessage: "line1\nline2\ttab\r\x00\x1f</script>&", ClientName: "c", ClientVersion: "1.0",
			ServerVersion: "2.0", UserID: "u", Attributes: map[string]string{"region": "eu", `k"ey`: "v\\al", "": ""}},
		{Timestamp: time.Now().UTC(), SessionID: "s", Method: "resources/read", Name: "file:///a b", DurationMs: &nan},
		{Timestamp: time.Now().In(time.FixedZone("x", 3600)), SessionID: "s", Method: "initialize", Status: ""},
	}
	for _, gz := range []bool{true, false} {
		t.Run(fmt.Sprintf("gzip=%v", gz), func(t *testing.T) {
			s := newService(t)
			c, _ := newClient(t, s, Options{DisableGzip: !gz})
			in := append([]analytics.Item(nil), tricky...)
			res, err := c.Send(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			if res != (Result{Accepted: 3}) {
				t.Fatalf("result = %+v", res)
			}
			reqs := s.requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests", len(reqs))
			}
			if enc := reqs[0].header.Get("Content-Encoding"); (enc == "gzip") != gz {
				t.Fatalf("Content-Encoding = %q", enc)
			}
			want := make([]analytics.Item, len(in))
			for i, it := range in {
				it.Normalize() // what the service does on arrival
				want[i] = it
			}
			want[1].DurationMs = nil // NaN has no JSON form: sent as not measured
			if got := reqs[0].items; !reflect.DeepEqual(got, want) {
				t.Fatalf("decoded\n%+v\nwant\n%+v", got, want)
			}
		})
	}
}

func TestSendFillsIDsInPlace(t *testing.T) {
	s := newService(t)
	c, _ := newClient(t, s, Options{})
	items := []analytics.Item{item(1), item(2)}
	items[1].ID = "mine"
	if _, err := c.Send(context.Background(), items); err != nil {
		t.Fatal(err)
	}
	if len(items[0].ID) != 36 || items[0].ID[14] != '4' || items[1].ID != "mine" {
		t.Fatalf("ids = %q, %q: want a UUID v4 for the first, the caller's for the second", items[0].ID, items[1].ID)
	}
	if got := s.items(); got[0].ID != items[0].ID {
		t.Fatalf("sent id %q, slice holds %q", got[0].ID, items[0].ID)
	}
}

func TestSendLimits(t *testing.T) {
	s := newService(t)
	c, _ := newClient(t, s, Options{})
	if _, err := c.Send(context.Background(), make([]analytics.Item, analytics.MaxBatchItems+1)); !errors.Is(err, ErrBatchTooLarge) {
		t.Fatalf("1001 items: %v, want ErrBatchTooLarge", err)
	}
	if res, err := c.Send(context.Background(), nil); err != nil || res != (Result{}) || len(s.requests()) != 0 {
		t.Fatalf("no items: %+v %v, %d requests", res, err, len(s.requests()))
	}

	// 1000 items of 2 KB each: over 1 MiB, so split into bodies under it.
	big := make([]analytics.Item, 1000)
	for i := range big {
		big[i] = item(i)
		big[i].ErrorType, big[i].ErrorMessage = "E", strings.Repeat("x", 1000)
		big[i].Attributes = map[string]string{"pad": strings.Repeat("y", 1000)}
	}
	res, err := c.Send(context.Background(), big)
	if err != nil {
		t.Fatal(err)
	}
	if res.Accepted != 1000 || len(s.requests()) < 2 || len(s.items()) != 1000 {
		t.Fatalf("result %+v in %d requests carrying %d items", res, len(s.requests()), len(s.items()))
	}

	huge := item(0)
	huge.Attributes = map[string]string{"pad": strings.Repeat("z", analytics.MaxBodyBytes)}
	if _, err := c.Send(context.Background(), []analytics.Item{huge}); !errors.Is(err, ErrBatchTooLarge) {
		t.Fatalf("one item over 1 MiB: %v, want ErrBatchTooLarge", err)
	}
}

func TestRetryAfterHonouredAndIDsKept(t *testing.T) {
	for _, tc := range []struct {
		name       string
		status     int
		retryAfter string
		cap        time.Duration
		wantWait   time.Duration
	}{
		{"429 seconds", 429, "3", 0, 3 * time.Second},
		{"503 seconds", 503, "7", 0, 7 * time.Second},
		{"429 capped", 429, "120", 50 * time.Millisecond, 50 * time.Millisecond},
		{"503 http date", 503, time.Now().Add(45 * time.Second).UTC().Format(http.TimeFormat), 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newService(t)
			s.script = append(s.script, answer(tc.status, "rate_limited", tc.retryAfter))
			c, waits := newClient(t, s, Options{MaxRetryDelay: tc.cap})
			res, err := c.Send(context.Background(), []analytics.Item{item(1), item(2)})
			if err != nil || res.Accepted != 2 {
				t.Fatalf("%+v %v", res, err)
			}
			if len(*waits) != 1 {
				t.Fatalf("waits = %v, want one", *waits)
			}
			if w := (*waits)[0]; tc.wantWait != 0 && w != tc.wantWait {
				t.Fatalf("waited %v, want %v", w, tc.wantWait)
			} else if tc.wantWait == 0 && (w < 40*time.Second || w > 45*time.Second) {
				t.Fatalf("waited %v for a date 45 s ahead", w)
			}
			reqs := s.requests()
			if len(reqs) != 2 || !reflect.DeepEqual(reqs[0].items, reqs[1].items) {
				t.Fatalf("the retry must resend the same items with the same ids")
			}
		})
	}
}

func TestServerErrorsBackOffExponentially(t *testing.T) {
	s := newService(t)
	s.script = append(s.script, answer(500, "internal", ""), answer(502, "", ""), answer(503, "unavailable", ""))
	c, waits := newClient(t, s, Options{RetryBaseDelay: 100 * time.Millisecond})
	if _, err := c.Send(context.Background(), []analytics.Item{item(1)}); err != nil {
		t.Fatal(err)
	}
	if len(*waits) != 3 {
		t.Fatalf("waits = %v, want 3", *waits)
	}
	for i, w := range *waits {
		hi := 100 * time.Millisecond << i
		if w < hi/2 || w > hi {
			t.Errorf("wait %d = %v, want within [%v, %v] (doubling with jitter)", i, w, hi/2, hi)
		}
	}
}

func TestRetriesRunOut(t *testing.T) {
	s := newService(t)
	for range 10 {
		s.script = append(s.script, answer(500, "internal", ""))
	}
	c, waits := newClient(t, s, Options{MaxRetries: 2})
	_, err := c.Send(context.Background(), []analytics.Item{item(1)})
	var se *Error
	if !errors.As(err, &se) || se.StatusCode != 500 || se.Code != "internal" {
		t.Fatalf("err = %v, want the last *Error", err)
	}
	if len(s.requests()) != 3 || len(*waits) != 2 {
		t.Fatalf("%d requests, %d waits: want 1 + 2 retries", len(s.requests()), len(*waits))
	}

	s2 := newService(t)
	s2.script = append(s2.script, answer(503, "unavailable", "1"))
	c2, _ := newClient(t, s2, Options{MaxRetries: -1})
	if _, err := c2.Send(context.Background(), []analytics.Item{item(1)}); !errors.As(err, &se) || se.StatusCode != 503 || len(s2.requests()) != 1 {
		t.Fatalf("MaxRetries -1: %v after %d requests, want no retry", err, len(s2.requests()))
	}
}

func TestClientErrorsAreFinalAndTyped(t *testing.T) {
	for _, tc := range []struct {
		status int
		code   string
	}{
		{400, "bad_request"},
		{401, "unauthenticated"},
		{403, "credential_not_allowed"},
		{413, "payload_too_large"},
		{415, "unsupported_media_type"},
		{422, "invalid"},
	} {
		t.Run(tc.code, func(t *testing.T) {
			s := newService(t)
			s.script = append(s.script, answer(tc.status, tc.code, "5"))
			c, waits := newClient(t, s, Options{})
			_, err := c.Send(context.Background(), []analytics.Item{item(1)})
			var se *Error
			if !errors.As(err, &se) {
				t.Fatalf("err = %v, want *Error", err)
			}
			if se.StatusCode != tc.status || se.Code != tc.code || se.Detail != "detail of "+tc.code || se.Temporary() {
				t.Fatalf("error = %+v", se)
			}
			if len(s.requests()) != 1 || len(*waits) != 0 {
				t.Fatalf("%d requests: a %d must not be retried", len(s.requests()), tc.status)
			}
		})
	}
}

func TestNetworkErrorIsRetried(t *testing.T) {
	s := newService(t)
	s.script = append(s.script, func(w http.ResponseWriter) bool {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return true
		}
		conn.Close() // no answer at all
		return true
	})
	c, waits := newClient(t, s, Options{})
	res, err := c.Send(context.Background(), []analytics.Item{item(1)})
	if err != nil || res.Accepted != 1 || len(*waits) != 1 || len(s.requests()) != 2 {
		t.Fatalf("%+v %v after %d waits, %d requests", res, err, len(*waits), len(s.requests()))
	}
}

func TestQueueIsBounded(t *testing.T) {
	s := newService(t)
	arrived, release := make(chan struct{}, 1), make(chan struct{})
	var once sync.Once
	s.hook = func() {
		once.Do(func() {
			arrived <- struct{}{}
			<-release
		})
	}
	c, _ := newClient(t, s, Options{BatchSize: 1, QueueSize: 5, FlushInterval: time.Hour})
	if err := c.Add(item(0)); err != nil {
		t.Fatal(err)
	}
	<-arrived // the sender holds item 0 in a request the service does not answer yet
	for i := 1; i <= 5; i++ {
		if err := c.Add(item(i)); err != nil {
			t.Fatalf("Add %d with room in the queue: %v", i, err)
		}
	}
	if err := c.Add(item(6)); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("Add to a full queue = %v, want ErrQueueFull", err)
	}
	if st := c.Stats(); st.Queued != 5 || st.Rejected != 1 {
		t.Fatalf("stats = %+v", st)
	}
	close(release)
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(s.items()); n != 6 {
		t.Fatalf("the service got %d items, want the 6 that were queued", n)
	}
}

func TestCloseGivesUpWhenContextEnds(t *testing.T) {
	s := newService(t)
	release := make(chan struct{})
	defer close(release)
	s.hook = func() { <-release }
	c, _ := newClient(t, s, Options{FlushInterval: time.Hour})
	for i := range 3 {
		if err := c.Add(item(i)); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Close(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Close = %v, want context.Canceled", err)
	}
	if st := c.Stats(); st.Failed != 3 {
		t.Fatalf("stats = %+v, want the 3 abandoned items counted as failed", st)
	}
}

func TestNewValidatesOptions(t *testing.T) {
	for _, opts := range []Options{
		{},
		{Key: "ik_x", Endpoint: "127.0.0.1:8080"},
		{Key: "ik_x", Endpoint: "ftp://host"},
		{Key: "ik_x", BatchSize: 1001},
		{Key: "ik_x", BatchSize: -1},
	} {
		if c, err := New(opts); err == nil {
			_ = c.Close(context.Background())
			t.Errorf("New(%+v) accepted", opts)
		}
	}
	c, err := New(Options{Key: "ik_x"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	if c.ingest != "http://127.0.0.1:8080/v1/ingest" || c.opts.BatchSize != 500 || c.opts.FlushInterval != time.Second ||
		c.opts.MaxRetries != DefaultMaxRetries || c.opts.DisableGzip {
		t.Fatalf("defaults: %s %+v", c.ingest, c.opts)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Duration
	}{
		{"", 0},
		{"1", time.Second},
		{" 30 ", 30 * time.Second},
		{"-4", 0},
		{"soon", 0},
		{"Fri, 20 Nov 2026 10:00:12 GMT", 12 * time.Second},
		{"Fri, 20 Nov 2026 09:00:00 GMT", 0},
	} {
		if got := parseRetryAfter(tc.in, now); got != tc.want {
			t.Errorf("parseRetryAfter(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// One oversize item loses only itself: its nine batch mates are sent, and
// an error message is cut to the contract's 1024 characters before it can
// make an item oversize.
func TestOversizeItemDoesNotLoseItsBatch(t *testing.T) {
	s := newService(t)
	c, _ := newClient(t, s, Options{FlushInterval: time.Hour})
	batch := make([]analytics.Item, 10)
	for i := range batch {
		batch[i] = item(i)
	}
	batch[4].Attributes = map[string]string{"pad": strings.Repeat("z", 2<<20)}
	res, err := c.Send(context.Background(), batch)
	if !errors.Is(err, ErrBatchTooLarge) || res.Accepted != 9 || len(s.items()) != 9 {
		t.Fatalf("Send: %+v %v, service got %d items; want 9 accepted and ErrBatchTooLarge for the one left out", res, err, len(s.items()))
	}
	for _, it := range s.items() {
		if it.ID == batch[4].ID {
			t.Fatal("the oversize item was sent")
		}
	}

	// Through the background sender: a 2 MiB message is cut, so all ten go.
	for i := range 10 {
		it := item(i)
		if i == 4 {
			it.ErrorType, it.ErrorMessage = "E", strings.Repeat("é", 2<<20)
		}
		if err := c.Add(it); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := s.items()[9:]
	if len(got) != 10 {
		t.Fatalf("background sender: %d items sent, want 10", len(got))
	}
	if m := got[4].ErrorMessage; len([]rune(m)) != analytics.MaxErrorMessage || m != strings.Repeat("é", analytics.MaxErrorMessage) {
		t.Fatalf("error message of %d characters sent, want it cut to %d", len([]rune(m)), analytics.MaxErrorMessage)
	}
	if st := c.Stats(); st.Accepted != 10 || st.Failed != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// Close waits at most ShutdownTimeout for an unreachable service, then
// drops what is queued with one warning.
func TestCloseHasAShortDeadline(t *testing.T) {
	var logs bytes.Buffer
	c, err := New(Options{Endpoint: "http://127.0.0.1:1", Key: "ik_x", FlushInterval: time.Hour,
		ShutdownTimeout: 300 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		_ = c.Add(item(i))
	}
	start := time.Now()
	if err := c.Close(context.Background()); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close = %v, want the deadline's error", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("Close took %v with a 300ms shutdown timeout", d)
	}
	if st := c.Stats(); st.Failed != 5 {
		t.Fatalf("stats %+v, want 5 failed", st)
	}
	if n := strings.Count(logs.String(), "shutdown deadline"); n != 1 {
		t.Fatalf("%d shutdown warnings, want 1:\n%s", n, logs.String())
	}
}

// A refused key is logged once, however many batches it refuses.
func TestRefusedKeyReportedOnce(t *testing.T) {
	for _, status := range []int{401, 403} {
		s := newService(t)
		var logs bytes.Buffer
		c, _ := newClient(t, s, Options{FlushInterval: time.Hour, Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
		for range 3 {
			s.mu.Lock()
			s.script = append(s.script, answer(status, "unauthenticated", ""))
			s.mu.Unlock()
			_ = c.Add(item(1))
			if err := c.Flush(context.Background()); err == nil {
				t.Fatalf("%d: flush succeeded", status)
			}
		}
		for range 3 {
			s.mu.Lock()
			s.script = append(s.script, answer(status, "unauthenticated", ""))
			s.mu.Unlock()
			_ = c.sendQueued(context.Background(), []analytics.Item{item(2)})
		}
		if n := strings.Count(logs.String(), "refuses the ingest key"); n != 1 {
			t.Fatalf("%d: key refusal logged %d times, want once:\n%s", status, n, logs.String())
		}
	}
}
