package httpapi

import (
	"bytes"
	"context"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/klauspost/compress/gzip"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/ingest"
	"github.com/mcpscope/telemetry/ingest/wire"
)

// Ingester makes accepted telemetry durable (the ingest pipeline).
type Ingester interface {
	// Allow applies the per-key rate limits. Errors: ERATELIMITED.
	Allow(keyID string) error
	// Refused counts a payload of the key refused whole (malformed, too
	// large, too many items, wrong media type): a key that sends many is
	// refused before its bodies are read.
	Refused(keyID string)
	// Accept redacts and cuts the items of one payload, appends the valid
	// ones to the write-ahead log and returns once they are durable.
	// Errors: EREDACTIONBUDGET, EUNAVAILABLE (log full).
	Accept(ctx context.Context, p ingest.Payload) (accepted, totalDropped int, err error)
}

// IngestResult is the 202 body of POST /v1/ingest.
type IngestResult struct {
	Accepted int `json:"accepted" doc:"Items made durable; they become readable within 5 seconds."`
	Dropped  int `json:"dropped" doc:"Items dropped: invalid ones and duplicates of ids accepted for this MCP in the last 24 hours."`
}

type rawBodyInput struct {
	ContentType     string `header:"Content-Type"`
	ContentEncoding string `header:"Content-Encoding"`
	RawBody         []byte
}

type ingestOutput struct {
	Body IngestResult
}

// ingestBatchDoc documents the ingest body; the handler decodes it itself
// so that an invalid item drops alone instead of failing the batch.
type ingestBatchDoc struct {
	Items []analytics.Item `json:"items" maxItems:"1000" doc:"Up to 1000 telemetry items."`
}

var ingestOp = huma.Operation{
	OperationID:   "ingest",
	Summary:       "Send a batch of telemetry items",
	Tags:          []string{"Ingest"},
	DefaultStatus: http.StatusAccepted,
	MaxBodyBytes:  analytics.MaxBodyBytes,
	Errors:        []int{400, 413, 415, 422, 429, 503},
	Description: `Takes an ingest key; the key names the MCP. The body is ` + "`{\"items\": [...]}`" + `, JSON,
optionally ` + "`Content-Encoding: gzip`" + `. At most 1000 items and 1 MiB after decompression.

Each item is checked against the field rules below; an invalid item is dropped without an
error and the valid items of the batch are kept. An item whose ` + "`id`" + ` was already accepted for
this MCP in the last 24 hours is dropped too, so retried batches never double count.
Unknown item fields are ignored.

| field | rule |
|---|---|
| timestamp | required, RFC 3339; not older than 30 days, not more than 10 minutes ahead |
| session_id | optional, <= 128 characters; sent, it wins. Without one (stateless servers, the MCP 2026-07-28 revision, which has no protocol sessions) the service derives the session: the items of one MCP and one identity (` + "`user_id`" + `, else ` + "`client_name`" + ` and ` + "`client_version`" + `) form one session until a gap longer than the MCP's idle timeout (default 30 minutes), with a deterministic id ` + "`auto-…`" + `; see the session rule below |
| method | required, 1–64 characters (tools/call, resources/read, prompts/get, initialize, …) |
| name | tool name for tools/call (required there), resource URI or prompt name otherwise; <= 256 characters |
| duration_ms | number 0–86 400 000; absent means not measured |
| status | ok or error; default ok; an item with error_type is an error |
| error_type, error_message | optional; the message is cut to 1024 characters |
| id | optional, <= 64 characters; deduplicated per MCP for 24 hours |
| client_name, client_version, server_version, user_id | optional, <= 128 characters |
| protocol_version | optional, <= 128 characters: the MCP protocol revision the request was made under (` + "`2025-06-18`" + `, ` + "`2026-07-28`" + `), as negotiated by ` + "`initialize`" + ` or declared by the request; stored, exported, a breakdown dimension (` + "`by=protocol_version`" + `) and listed per client in the insights' ` + "`clients`" + ` |
| attributes | optional object of string to string, at most 32 pairs; each value is cut to 1024 characters |
| error_kind | optional: ` + "`tool_error`, `exception`, `invalid_params`, `unknown_tool`, `method_not_found`, `timeout`, `cancelled`, `auth`, `internal`, `other`" + `; any other value makes the item invalid; an item with one is an error; an error item without one gets one derived (docs/failures.md) |
| response_bytes | optional integer 0 to 2^40: the size of the serialized result; anything else makes the item invalid |
| args_hash | optional, <= 128 characters: the SDK's keyed hash of the call's canonical arguments (never the arguments); longer makes the item invalid; the same tool and hash as the session's previous call is a repeat |

**Sessions of items without a session_id.** Per MCP and identity (` + "`user_id`" + `, else the pair
` + "`client_name`" + ` and ` + "`client_version`" + `, both possibly empty), an item later than the identity's
latest item by more than the idle timeout begins a new session; otherwise it joins the current
one, as does a late item at most the idle timeout before the current session began (an older one
forms a session of its own). The session id is ` + "`auto-`" + ` and 24 hex characters of a hash of the
MCP, the identity and the instant the session began: the same on every instance and every retry.
The sessions list, timelines, every ` + "`sessions`" + ` figure and rule metric count these sessions like
sent ones. The idle timeout is ` + "`session_idle_minutes`" + ` of the MCP (1 to 1440, default 30). While
PostgreSQL is unreachable such items are still accepted, their sessions derived from what the
instance placed last (see docs/sessions.md for what that guarantees).

**202 means durable**: the accepted items are in the service's fsynced write-ahead log before
the answer; they survive a crash of the service and an outage of ClickHouse and become readable
in metric reads within 5 seconds while ClickHouse is up. The service takes ingest even when it
starts during a ClickHouse outage. 503 ` + "`unavailable`" + ` with ` + "`Retry-After`" + ` means nothing of the
payload was accepted (the log could not write it, or the shared duplicate filter is unreachable):
retry the same payload. Retrying after a timeout or a lost answer is always safe for items with
an ` + "`id`" + `: they are stored once, also when the retry reaches another instance with
` + "`ingest.shared_dedup`" + ` on.

With the MCP's redaction on (` + "`redaction`" + ` on ` + "`/v1/mcps/{id}`" + `), error_message and attribute values are
redacted first and cut after, so no part of a secret straddling the cut is kept (a match is sought
up to 1024 bytes past the cut; nothing beyond that is read). Redaction may spend 40 ms of CPU per
MiB of payload (` + "`ingest.redaction_budget`" + `, at least 2 ms a payload): past it the payload is refused
whole, 422 ` + "`redaction_budget_exceeded`" + `, nothing stored; retrying the same payload fails the same way:
simplify the MCP's patterns (see docs/limits.md).

Refused as a whole only when it is not a batch: not JSON or no items array (400), over 1 MiB
after decompression (413 ` + "`payload_too_large`" + `), over 1000 items (413 ` + "`too_many_items`" + `), another
content type (415). Payloads per ingest key per minute are limited (default 600): beyond it
429 ` + "`rate_limited`" + ` with ` + "`Retry-After`" + `; likewise once a key sent more payloads refused whole
(400, 413, 415) in a minute than ` + "`ingest.refused_per_minute`" + ` allows (default 60), before the body
is read. While storage is catching up beyond its disk budget:
503 with ` + "`Retry-After`" + `. Items are counted before any is decoded, so a body of more than 1000 items
costs nothing to refuse; and the service decodes a bounded number of bytes at once across all
requests (` + "`ingest.decode_budget_bytes`" + `): past it a body waits up to a second, then gets 503
` + "`unavailable`" + ` with ` + "`Retry-After`" + `.`,
}

func (s *Server) ingest(ctx context.Context, in *rawBodyInput) (*ingestOutput, error) {
	p := principal(ctx)
	if err := s.opts.Ingester.Allow(p.KeyID); err != nil {
		return nil, err
	}
	if err := requireMediaType(in.ContentType, "application/json"); err != nil {
		return nil, s.refusedWhole(p.KeyID, err)
	}
	body, release, err := s.decodeBudgeted(ctx, in.RawBody, in.ContentEncoding, analytics.MaxBodyBytes, wire.CheckItemCount)
	if err != nil {
		return nil, s.refusedWhole(p.KeyID, err)
	}
	defer release()
	parse := wire.ParseBatch
	if compressed(in.ContentEncoding) {
		parse = wire.ParseCountedBatch // decodeBody counted the items as it inflated them
	}
	batch, err := parse(body, time.Now())
	if err != nil {
		return nil, s.refusedWhole(p.KeyID, err)
	}
	accepted, dropped, err := s.opts.Ingester.Accept(ctx, ingest.Payload{AccountID: p.AccountID, MCPID: p.MCPID,
		Items: batch.Items, Dropped: batch.Dropped, Redactor: p.Redactor, BodyBytes: len(body)})
	if err != nil {
		return nil, err
	}
	return &ingestOutput{Body: IngestResult{Accepted: accepted, Dropped: dropped}}, nil
}

// refusedWhole counts err against the key's allowance of payloads refused
// whole when it is such a refusal, and returns it.
func (s *Server) refusedWhole(keyID string, err error) error {
	switch telemetry.ErrorCode(err) {
	case telemetry.EBADREQUEST, telemetry.ETOOLARGE, telemetry.ETOOMANYITEMS, telemetry.EUNSUPPORTEDMEDIA:
		s.opts.Ingester.Refused(keyID)
	}
	return err
}

// ingestBody describes the ingest body in /docs.
func ingestBody(s *Server) map[string]*huma.MediaType {
	return map[string]*huma.MediaType{
		"application/json": {Schema: s.api.OpenAPI().Components.Schemas.Schema(reflect.TypeOf(ingestBatchDoc{}), true, "IngestBatch")},
	}
}

// requireMediaType refuses a body whose media type is not one of want.
func requireMediaType(contentType string, want ...string) error {
	mt, _, err := mime.ParseMediaType(contentType)
	if err == nil {
		for _, w := range want {
			if strings.EqualFold(mt, w) {
				return nil
			}
		}
	}
	return telemetry.Errorf(telemetry.EUNSUPPORTEDMEDIA, "The body must be sent as %s, not %q.", strings.Join(want, " or "), contentType)
}

var (
	gzipReaders sync.Pool
	// inflated holds decompression buffers: at a few hundred payloads a
	// second, a fresh megabyte each would be most of the garbage.
	inflated = sync.Pool{New: func() any { return new(bytes.Buffer) }}
)

// DefaultDecodeBudgetBytes is the default of Options.DecodeBudgetBytes.
const DefaultDecodeBudgetBytes = 32 << 20

// decodeWait is how long a body waits for room in the decode budget before
// 503.
const decodeWait = time.Second

// decodeBudgeted decodes a raw ingest or OTLP body (decodeBody) within the
// service-wide budget of bytes being decoded at once: it reserves what the
// body can become (its own size, or the limit when compressed) for as long
// as the caller holds it, waits up to decodeWait for room, and answers 503
// unavailable with Retry-After past that, so concurrent hostile bodies
// queue briefly or are refused, and never take more memory. Call release
// once the decoded body and everything built from it are no longer used.
func (s *Server) decodeBudgeted(ctx context.Context, raw []byte, encoding string, limit int64, precheck func([]byte) error) (body []byte, release func(), err error) {
	reserve := min(int64(len(raw)), limit)
	if compressed(encoding) {
		reserve = limit
	}
	releaseReserve, err := s.reserveDecoding(ctx, reserve)
	if err != nil {
		return nil, func() {}, err
	}
	body, releaseBody, err := decodeBody(raw, encoding, limit, precheck)
	if err != nil {
		releaseReserve()
		return nil, func() {}, err
	}
	return body, func() { releaseBody(); releaseReserve() }, nil
}

// reserveDecoding reserves n bytes of the decode budget (at most all of
// it, at least 1), waiting up to decodeWait, else 503 unavailable with
// Retry-After. Call release once when they are no longer used.
func (s *Server) reserveDecoding(ctx context.Context, n int64) (release func(), err error) {
	n = min(max(n, 1), s.opts.DecodeBudgetBytes)
	wctx, cancel := context.WithTimeout(ctx, decodeWait)
	err = s.decoding.Acquire(wctx, n)
	cancel()
	if err != nil {
		return nil, &telemetry.Error{Code: telemetry.EUNAVAILABLE, RetryAfter: 1,
			Message: "The service is decoding as much as it allows at once; retry shortly."}
	}
	return func() { s.decoding.Release(n) }, nil
}

// inflateStep is the first step of decodeBody's inflation. Each step
// counts the items of everything inflated so far, so a body larger than
// the step is counted more than once: the step holds a typical batch (500
// items, about 150 KiB) whole, so that it is counted once.
const inflateStep = 256 << 10

// compressed reports whether a body sent with Content-Encoding encoding is
// to be inflated (decodeBody): anything but none or identity.
func compressed(encoding string) bool {
	enc := strings.ToLower(strings.TrimSpace(encoding))
	return enc != "" && enc != "identity"
}

// decodeBody undoes Content-Encoding and enforces the size limit on the
// decompressed bytes, reading at most limit+1 of them: a gzip bomb is never
// inflated into memory. precheck, when set, judges the inflated prefix as
// it grows (item counting), the whole body last, and its error refuses the
// body at once. Call release once the body is no longer used.
func decodeBody(raw []byte, encoding string, limit int64, precheck func([]byte) error) (body []byte, release func(), err error) {
	noop := func() {}
	if !compressed(encoding) {
		return raw, noop, nil
	}
	switch strings.ToLower(strings.TrimSpace(encoding)) {
	case "gzip", "x-gzip":
	default:
		return nil, noop, telemetry.Errorf(telemetry.EUNSUPPORTEDMEDIA, "Content-Encoding %q is not supported; use gzip or none.", encoding)
	}
	zr, _ := gzipReaders.Get().(*gzip.Reader)
	if zr == nil {
		zr, err = gzip.NewReader(bytes.NewReader(raw))
	} else {
		err = zr.Reset(bytes.NewReader(raw))
	}
	if err != nil {
		return nil, noop, telemetry.Errorf(telemetry.EBADREQUEST, "The body is not valid gzip.")
	}
	defer gzipReaders.Put(zr)
	buf := inflated.Get().(*bytes.Buffer)
	buf.Reset()
	release = func() {
		if buf.Cap() <= int(limit)+bytes.MinRead+1 {
			inflated.Put(buf)
		}
	}
	// Inflate in growing steps, checking the item count of what arrived
	// at each one: a bomb of empty items is refused after its first
	// inflateStep bytes are inflated, not the whole megabyte.
	r := io.LimitReader(zr, limit+1)
	for step := int64(inflateStep); ; step *= 2 {
		n, err := buf.ReadFrom(io.LimitReader(r, step))
		if int64(buf.Len()) > limit {
			release()
			return nil, noop, telemetry.Errorf(telemetry.ETOOLARGE, "The body is over %d bytes after decompression.", limit)
		}
		if err != nil {
			release()
			return nil, noop, telemetry.Errorf(telemetry.EBADREQUEST, "The body is not valid gzip.")
		}
		if precheck != nil {
			if err := precheck(buf.Bytes()); err != nil {
				release()
				return nil, noop, err
			}
		}
		if n < step {
			break
		}
	}
	return buf.Bytes(), release, nil
}
