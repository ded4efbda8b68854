package client

import (
	"errors"
	"fmt"
	"time"
)

// Errors of the queueing side of the client.
var (
	// ErrQueueFull is returned by Add when the queue holds QueueSize items:
	// Add never blocks, so that a slow or unreachable service cannot stall
	// the MCP server that reports to it. The item is not queued.
	ErrQueueFull = errors.New("client: queue full, item not queued")
	// ErrClosed is returned by Add, Flush and Close after Close. Send does
	// not use the background sender and keeps working.
	ErrClosed = errors.New("client: closed")
	// ErrBatchTooLarge is returned by Send for more than MaxBatchItems
	// items, and for one item that alone is over the service's body limit.
	ErrBatchTooLarge = errors.New("client: batch too large")
)

// Error is a refusal by the service: a non-2xx answer, with the fields of
// its RFC 9457 problem document. Match it with errors.As; Code is the
// contract's stable machine-readable code ("unauthenticated",
// "rate_limited", "payload_too_large", ...).
type Error struct {
	StatusCode int
	Code       string
	Title      string
	Detail     string
	// RetryAfter is the service's Retry-After, zero when it sent none.
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	code := e.Code
	if code == "" {
		code = e.Title
	}
	if e.Detail != "" {
		return fmt.Sprintf("client: service answered %d %s: %s", e.StatusCode, code, e.Detail)
	}
	return fmt.Sprintf("client: service answered %d %s", e.StatusCode, code)
}

// Temporary reports whether the request may succeed if sent again later:
// 429 and every 5xx. Other 4xx mean the request itself is wrong (bad key,
// body the service refuses) and are never retried.
func (e *Error) Temporary() bool {
	return e.StatusCode == 429 || e.StatusCode >= 500
}
