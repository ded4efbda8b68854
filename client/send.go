package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/analytics"
)

// Send posts items synchronously, retrying as the package comment says,
// and returns the service's counts. Items without an id get one in place,
// so that a caller who sends the same slice again never double counts.
// The items go in one request, or in several when their JSON is over the
// service's 1 MiB body limit. More than analytics.MaxBatchItems items is
// ErrBatchTooLarge. An item over the limit alone is left out and the others
// are sent: the error then wraps ErrBatchTooLarge and says how many were
// left out (they are in neither Accepted nor Dropped).
//
// When one of several requests fails, the Result still counts the ones
// before it.
func (c *Client) Send(ctx context.Context, items []analytics.Item) (Result, error) {
	if len(items) == 0 {
		return Result{}, nil
	}
	if len(items) > analytics.MaxBatchItems {
		return Result{}, fmt.Errorf("%w: %d items, at most %d", ErrBatchTooLarge, len(items), analytics.MaxBatchItems)
	}
	for i := range items {
		if items[i].ID == "" {
			items[i].ID = NewID()
		}
	}
	var oversize int
	res, err := c.sendSplit(ctx, items, &oversize)
	if err == nil && oversize > 0 {
		err = fmt.Errorf("%w: %d item(s) each over the %d-byte body limit alone, left out", ErrBatchTooLarge, oversize, analytics.MaxBodyBytes)
	}
	return res, err
}

// Pools of encoding and compression buffers: a busy client sends many
// bodies of similar size.
var (
	jsonPool = sync.Pool{New: func() any { return new([]byte) }}
	bufPool  = sync.Pool{New: func() any { return new(bytes.Buffer) }}
)

// sendSplit sends items in bodies under the limit, halving as needed; an
// item over the limit alone is counted in oversize and skipped.
func (c *Client) sendSplit(ctx context.Context, items []analytics.Item, oversize *int) (Result, error) {
	raw := jsonPool.Get().(*[]byte)
	defer jsonPool.Put(raw)
	*raw = appendBatch((*raw)[:0], items)
	if len(*raw) > analytics.MaxBodyBytes {
		if len(items) == 1 {
			*oversize++
			return Result{}, nil
		}
		half := len(items) / 2
		first, err := c.sendSplit(ctx, items[:half], oversize)
		if err != nil {
			return first, err
		}
		second, err := c.sendSplit(ctx, items[half:], oversize)
		return Result{Accepted: first.Accepted + second.Accepted, Dropped: first.Dropped + second.Dropped}, err
	}
	if c.opts.DisableGzip {
		return c.sendBody(ctx, *raw)
	}
	body := bufPool.Get().(*bytes.Buffer)
	defer bufPool.Put(body)
	body.Reset()
	if err := compress(body, *raw); err != nil {
		return Result{}, err
	}
	return c.sendBody(ctx, body.Bytes())
}

var gzipPool sync.Pool

// compress gzips src into dst at the fastest level: telemetry JSON is
// repetitive enough that it still shrinks several times, and the CPU is
// the MCP server's.
func compress(dst *bytes.Buffer, src []byte) error {
	zw, _ := gzipPool.Get().(*gzip.Writer)
	if zw == nil {
		var err error
		if zw, err = gzip.NewWriterLevel(dst, gzip.BestSpeed); err != nil {
			return err
		}
	} else {
		zw.Reset(dst)
	}
	defer gzipPool.Put(zw)
	if _, err := zw.Write(src); err != nil {
		return err
	}
	return zw.Close()
}

// sendBody posts one encoded body until it is answered, a final error
// occurs, or the retries run out.
func (c *Client) sendBody(ctx context.Context, body []byte) (Result, error) {
	for attempt := 0; ; attempt++ {
		res, err := c.post(ctx, body)
		if err == nil {
			return res, nil
		}
		wait, ok := c.retryDelay(ctx, err, attempt)
		if !ok {
			return Result{}, err
		}
		c.opts.Logger.Debug("telemetry client: retrying", "attempt", attempt+1, "wait", wait, "error", err)
		if serr := c.sleep(ctx, wait); serr != nil {
			return Result{}, fmt.Errorf("%w (last error: %w)", serr, err)
		}
	}
}

// retryDelay decides whether err is worth another attempt and how long to
// wait first: the service's Retry-After when it gave one (429, 503),
// exponential backoff with jitter for other 5xx and network errors.
func (c *Client) retryDelay(ctx context.Context, err error, attempt int) (time.Duration, bool) {
	if attempt >= c.opts.MaxRetries || ctx.Err() != nil {
		return 0, false
	}
	var se *Error
	if errors.As(err, &se) {
		if !se.Temporary() {
			return 0, false
		}
		if se.RetryAfter > 0 {
			return min(se.RetryAfter, c.opts.MaxRetryDelay), true
		}
	}
	return c.backoff(attempt), true
}

// backoff is base * 2^attempt, capped, with "equal jitter": a random point
// in its upper half, so that clients that failed together do not retry
// together yet each still waits.
func (c *Client) backoff(attempt int) time.Duration {
	return telemetry.Backoff{Base: c.opts.RetryBaseDelay, Max: c.opts.MaxRetryDelay, Jitter: true}.Delay(attempt)
}

// problem is the part of an RFC 9457 problem document the client reads.
type problem struct {
	Title  string `json:"title"`
	Detail string `json:"detail"`
	Code   string `json:"code"`
}

// maxAnswer bounds how much of an answer is read: the service's answers
// are small, and a proxy's error page need not be read whole.
const maxAnswer = 64 << 10

func (c *Client) post(ctx context.Context, body []byte) (Result, error) {
	answer, err := c.postTo(ctx, c.ingest, body)
	if err != nil {
		return Result{}, err
	}
	var res Result
	if err := json.Unmarshal(answer, &res); err != nil {
		return Result{}, fmt.Errorf("client: service answered with an unreadable body: %w", err)
	}
	return res, nil
}

// postTo posts body (gzipped unless DisableGzip) to url with the key and
// returns a 2xx answer's body, or the refusal as *Error.
func (c *Client) postTo(ctx context.Context, url string, body []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if !c.opts.DisableGzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	req.Header.Set("Authorization", c.auth)
	req.Header.Set("User-Agent", "mcpscope-telemetry-go/1")
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	_, _ = io.Copy(io.Discard, resp.Body) // so the connection is reused
	if resp.StatusCode/100 == 2 {
		return answer, err
	}
	e := &Error{StatusCode: resp.StatusCode, RetryAfter: parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())}
	var p problem
	if json.Unmarshal(answer, &p) == nil {
		e.Code, e.Title, e.Detail = p.Code, p.Title, p.Detail
	}
	if e.Title == "" {
		e.Title = http.StatusText(resp.StatusCode)
	}
	return nil, e
}

// parseRetryAfter reads Retry-After as seconds (what the service sends) or
// as an HTTP date (what proxies may send); zero when absent or unreadable.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil {
		if s < 0 {
			return 0
		}
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
