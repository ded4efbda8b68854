package httpapi

import (
	"bytes"
	"compress/gzip"
	"testing"
	"time"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/ingest/wire"
)

// FuzzDecodeBody drives the ingest body path (Content-Encoding, the size
// limit while inflating, item counting, decoding) with arbitrary bytes,
// plain and gzipped: it must never panic, never return more than the limit,
// never accept more than 1000 items, and fail only with the contract's
// codes.
func FuzzDecodeBody(f *testing.F) {
	f.Add([]byte(`{"items":[{"timestamp":"2026-11-20T10:00:00Z","session_id":"s","method":"ping"}]}`), false)
	f.Add([]byte(`{"items":[{},{},{}]}`), true)
	f.Add([]byte(`not json`), true)
	f.Add([]byte{0x1f, 0x8b, 0x08, 0x00}, false)
	const limit = 4096
	f.Fuzz(func(t *testing.T, raw []byte, gz bool) {
		encoding := ""
		if gz {
			var buf bytes.Buffer
			zw := gzip.NewWriter(&buf)
			_, _ = zw.Write(raw)
			_ = zw.Close()
			raw, encoding = buf.Bytes(), "gzip"
		}
		body, release, err := decodeBody(raw, encoding, limit, wire.CheckItemCount)
		defer release()
		if err != nil {
			if c := telemetry.ErrorCode(err); c != telemetry.EBADREQUEST && c != telemetry.ETOOLARGE && c != telemetry.EUNSUPPORTEDMEDIA && c != telemetry.ETOOMANYITEMS {
				t.Fatalf("decode: %v", err)
			}
			return
		}
		if len(body) > limit {
			t.Fatalf("%d bytes past the %d limit", len(body), limit)
		}
		b, err := wire.ParseBatch(body, time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC))
		if err != nil {
			if c := telemetry.ErrorCode(err); c != telemetry.EBADREQUEST && c != telemetry.ETOOMANYITEMS {
				t.Fatalf("parse: %v", err)
			}
			return
		}
		if len(b.Items)+b.Dropped > 1000 {
			t.Fatalf("%d items accepted and %d dropped: over the batch limit", len(b.Items), b.Dropped)
		}
	})
}
