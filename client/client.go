// Package client sends telemetry items to the service's ingest endpoint
// (POST /v1/ingest, wire version 1). An MCP server queues items with Add
// and the client posts them in the background in gzip batches; a program
// that batches itself (the load generator) calls Send.
//
//	c, err := client.New(client.Options{Key: os.Getenv("TELEMETRY_KEY")})
//	...
//	c.Add(analytics.Item{SessionID: sid, Method: "tools/call", Name: "search", ...})
//	...
//	defer c.Close(ctx) // sends what is still queued
//
// Every item gets a random UUID v4 id when it has none, before its first
// attempt: the service drops an id it accepted in the last 24 hours, so a
// retried batch never counts twice. Retries follow the contract: network
// errors and 5xx are retried with exponential backoff and jitter, 429 and
// 503 after the service's Retry-After; other 4xx are final and come back
// as *Error with the problem document's code.
package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/analytics"
)

// Defaults of Options.
const (
	DefaultEndpoint       = "http://127.0.0.1:8080"
	DefaultBatchSize      = 500
	DefaultFlushInterval  = time.Second
	DefaultQueueSize      = 10_000
	DefaultMaxRetries     = 5
	DefaultRetryBaseDelay = 250 * time.Millisecond
	DefaultMaxRetryDelay  = time.Minute
	DefaultTimeout        = 30 * time.Second
	// DefaultShutdownTimeout bounds Close: an MCP server whose telemetry
	// service is unreachable must still exit promptly when its client
	// leaves.
	DefaultShutdownTimeout = 2 * time.Second
)

// Options configure a Client. Zero values mean the defaults above.
type Options struct {
	// Endpoint is the service's base address, without /v1.
	Endpoint string
	// Key is the ingest key (ik_...); it names the MCP. Required.
	Key string
	// HTTPClient sends the requests; by default one with a 30 s timeout
	// and a connection pool sized for concurrent Send calls.
	HTTPClient *http.Client
	// BatchSize is how many queued items one background request carries,
	// at most analytics.MaxBatchItems (1000).
	BatchSize int
	// FlushInterval is the longest a queued item waits before being sent.
	FlushInterval time.Duration
	// QueueSize bounds the items waiting to be sent; Add returns
	// ErrQueueFull beyond it.
	QueueSize int
	// DisableGzip sends bodies uncompressed (gzip is on by default; a
	// plain bool named Gzip could not default to true).
	DisableGzip bool
	// MaxRetries is how many times a failed request is sent again; 0 means
	// DefaultMaxRetries, a negative value means never.
	MaxRetries int
	// RetryBaseDelay is the first backoff after a 5xx or network error; it
	// doubles with every attempt (with jitter).
	RetryBaseDelay time.Duration
	// MaxRetryDelay caps every wait between attempts, Retry-After included.
	MaxRetryDelay time.Duration
	// ShutdownTimeout is the longest Close waits for what is queued
	// (retries included) before it drops the rest with one warning;
	// DefaultShutdownTimeout when zero. Close's own context may end it
	// sooner.
	ShutdownTimeout time.Duration
	// Logger receives failures of background sends; silent by default. A
	// refused key (401, 403) is logged once, not on every batch.
	Logger *slog.Logger
}

// Result is the service's answer to one batch (or the sum over the
// requests of one Send).
type Result struct {
	Accepted int `json:"accepted"`
	Dropped  int `json:"dropped"`
}

// Stats are running totals of the background sender.
type Stats struct {
	Queued   int   // items waiting now
	Accepted int64 // items the service accepted
	Dropped  int64 // items the service dropped (invalid or duplicate)
	Failed   int64 // items given up after the last retry or at Close, or over the body limit alone
	Rejected int64 // Add calls refused with ErrQueueFull
}

// Client sends items to the ingest endpoint. It is safe for concurrent use.
// Close it to stop its background sender and send what is queued.
type Client struct {
	opts    Options
	hc      *http.Client
	ingest  string
	auth    string
	queue   chan analytics.Item
	flushc  chan flushRequest
	stop    chan struct{}
	done    chan struct{}
	bg      context.Context // background sends; cancelled by Close
	cancel  context.CancelFunc
	mu      sync.RWMutex // Add holds it shared, Close exclusively
	closed  bool
	stopped sync.Once

	accepted, dropped, failed, rejected atomic.Int64
	keyRefused                          atomic.Bool // a 401 or 403 was logged

	// sleep waits between attempts; tests replace it to record the waits.
	sleep func(ctx context.Context, d time.Duration) error
}

type flushRequest struct {
	ctx  context.Context
	last bool // Close: the sender exits after it
	done chan error
}

// New checks the options, fills the defaults and starts the background
// sender.
func New(opts Options) (*Client, error) {
	if opts.Key == "" {
		return nil, errors.New("client: Options.Key (an ingest key) is required")
	}
	if opts.Endpoint == "" {
		opts.Endpoint = DefaultEndpoint
	}
	u, err := url.Parse(opts.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("client: Options.Endpoint %q must be an absolute http(s) URL", opts.Endpoint)
	}
	switch {
	case opts.BatchSize == 0:
		opts.BatchSize = DefaultBatchSize
	case opts.BatchSize < 0 || opts.BatchSize > analytics.MaxBatchItems:
		return nil, fmt.Errorf("client: Options.BatchSize %d must be between 1 and %d", opts.BatchSize, analytics.MaxBatchItems)
	}
	opts.FlushInterval = positiveOr(opts.FlushInterval, DefaultFlushInterval)
	opts.ShutdownTimeout = positiveOr(opts.ShutdownTimeout, DefaultShutdownTimeout)
	opts.RetryBaseDelay = positiveOr(opts.RetryBaseDelay, DefaultRetryBaseDelay)
	opts.MaxRetryDelay = positiveOr(opts.MaxRetryDelay, DefaultMaxRetryDelay)
	if opts.QueueSize <= 0 {
		opts.QueueSize = DefaultQueueSize
	}
	if opts.MaxRetries == 0 {
		opts.MaxRetries = DefaultMaxRetries
	} else if opts.MaxRetries < 0 {
		opts.MaxRetries = 0
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	hc := opts.HTTPClient
	if hc == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = 64 // the default 2 would reopen connections under concurrent Sends
		hc = &http.Client{Timeout: DefaultTimeout, Transport: t}
	}
	bg, cancel := context.WithCancel(context.Background())
	c := &Client{
		opts:   opts,
		hc:     hc,
		ingest: strings.TrimRight(opts.Endpoint, "/") + "/v1/ingest",
		auth:   "Bearer " + opts.Key,
		queue:  make(chan analytics.Item, opts.QueueSize),
		flushc: make(chan flushRequest),
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
		bg:     bg,
		cancel: cancel,
		sleep:  telemetry.Sleep,
	}
	go c.run()
	return c, nil
}

func positiveOr(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// NewID returns a random UUID v4, the id Add and Send give items without
// one.
func NewID() string { return uuid.NewString() }

// Add queues one item for the background sender. It never blocks: when
// the queue is full it returns ErrQueueFull and the item is not sent. An
// item without an id gets one, without a timestamp gets the current time;
// its error message and attribute values are cut to the contract's
// limits (analytics.Item.CutText), as the service would cut them.
func (c *Client) Add(it analytics.Item) error {
	if it.ID == "" {
		it.ID = NewID()
	}
	if it.Timestamp.IsZero() {
		it.Timestamp = time.Now()
	}
	it.Normalize()
	_ = it.CutText(cutChars)
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.closed {
		return ErrClosed
	}
	select {
	case c.queue <- it:
		return nil
	default:
		c.rejected.Add(1)
		return ErrQueueFull
	}
}

// Flush sends every item queued before the call and returns once the
// service answered, or with the first error (the failed items are counted
// in Stats().Failed, not kept). ctx bounds the sends and their retries.
func (c *Client) Flush(ctx context.Context) error {
	c.mu.RLock()
	closed := c.closed
	c.mu.RUnlock()
	if closed {
		return ErrClosed
	}
	return c.requestFlush(ctx, false)
}

// Close stops accepting items, sends what is queued and stops the
// background sender. It waits at most Options.ShutdownTimeout (or until
// ctx ends): then the items still queued are abandoned (counted in
// Stats().Failed, with one warning) and the deadline's error is returned.
func (c *Client) Close(ctx context.Context) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return ErrClosed
	}
	c.closed = true
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, c.opts.ShutdownTimeout)
	defer cancel()
	err := c.requestFlush(ctx, true)
	c.stopped.Do(func() { c.cancel(); close(c.stop) })
	<-c.done
	if err != nil {
		if n := c.failed.Load(); n > 0 {
			c.opts.Logger.Warn("telemetry client: shutdown deadline reached, queued items dropped",
				"failed_total", n, "error", err)
		}
	}
	return err
}

func (c *Client) requestFlush(ctx context.Context, last bool) error {
	req := flushRequest{ctx: ctx, last: last, done: make(chan error, 1)}
	select {
	case c.flushc <- req:
	case <-c.done:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-req.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Stats returns the background sender's running totals.
func (c *Client) Stats() Stats {
	return Stats{
		Queued:   len(c.queue),
		Accepted: c.accepted.Load(),
		Dropped:  c.dropped.Load(),
		Failed:   c.failed.Load(),
		Rejected: c.rejected.Load(),
	}
}

// run is the background sender: it posts a batch when BatchSize items are
// queued, when the oldest has waited FlushInterval, and on Flush and Close.
// One request at a time, so items leave in the order they were added.
func (c *Client) run() {
	defer close(c.done)
	buf := make([]analytics.Item, 0, c.opts.BatchSize)
	timer := time.NewTimer(c.opts.FlushInterval)
	timer.Stop()
	send := func(ctx context.Context) error {
		timer.Stop()
		if len(buf) == 0 {
			return nil
		}
		err := c.sendQueued(ctx, buf)
		clear(buf) // drop references to the items' strings
		buf = buf[:0]
		return err
	}
	for {
		select {
		case it := <-c.queue:
			if len(buf) == 0 {
				timer.Reset(c.opts.FlushInterval)
			}
			buf = append(buf, it)
			if len(buf) >= c.opts.BatchSize {
				_ = send(c.bg)
			}
		case <-timer.C:
			_ = send(c.bg)
		case req := <-c.flushc:
			var firstErr error
			for n := len(c.queue); n > 0; n-- {
				buf = append(buf, <-c.queue)
				if len(buf) >= c.opts.BatchSize {
					if err := send(req.ctx); err != nil && firstErr == nil {
						firstErr = err
					}
				}
			}
			if err := send(req.ctx); err != nil && firstErr == nil {
				firstErr = err
			}
			req.done <- firstErr
			if req.last {
				return
			}
		case <-c.stop:
			c.failed.Add(int64(len(buf) + len(c.queue)))
			return
		}
	}
}

// sendQueued sends one background batch and keeps the totals.
func (c *Client) sendQueued(ctx context.Context, items []analytics.Item) error {
	res, err := c.Send(ctx, items)
	c.accepted.Add(int64(res.Accepted))
	c.dropped.Add(int64(res.Dropped))
	if err != nil {
		c.failed.Add(int64(len(items) - res.Accepted - res.Dropped))
		c.report(err, len(items))
	}
	return err
}

// report logs a failed background batch. A refused key (401, 403) stays
// refused until someone replaces it: it is logged once, later refusals at
// debug level only.
func (c *Client) report(err error, n int) {
	var se *Error
	if errors.As(err, &se) && (se.StatusCode == 401 || se.StatusCode == 403) {
		if !c.keyRefused.CompareAndSwap(false, true) {
			c.opts.Logger.Debug("telemetry client: batch not sent, key refused", "items", n, "error", err)
			return
		}
		c.opts.Logger.Error("telemetry client: the service refuses the ingest key (wrong or deleted); nothing is recorded until it is replaced",
			"status", se.StatusCode, "code", se.Code)
		return
	}
	c.opts.Logger.Warn("telemetry client: batch not sent", "items", n, "error", err)
}

// cutChars keeps the first maxChars characters of s.
func cutChars(s string, maxChars int) (string, error) {
	n := 0
	for i := range s {
		if n == maxChars {
			return s[:i], nil
		}
		n++
	}
	return s, nil
}
