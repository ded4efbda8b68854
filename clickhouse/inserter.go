package clickhouse

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	chproto "github.com/ClickHouse/ch-go/proto"
	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/proto"
	"github.com/google/uuid"

	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/clickhouse/native"
)

// Inserts go over native-protocol connections of the Sink's own (package
// native), not through the driver's batches: the driver appends
// LowCardinality and Array columns by reflection, a boxed copy per row,
// which cost about 4 µs of CPU per row (docs/benchmarks.md, "Ingest").
// InsertRows encodes the rows straight into ch-go's proto columns
// (eventBlock), reused by the next insert, and sends them as one block.

// eventBlock holds an insert's rows as the events columns, in the order of
// EventColumns.
type eventBlock struct {
	account, mcp, id, session, name, errMsg, user, userKey chproto.ColStr
	argsHash                                               chproto.ColStr
	idUUID                                                 chproto.ColUUID
	respBytes                                              chproto.ColInt64
	ts, received                                           chproto.ColDateTime
	ms                                                     chproto.ColUInt16
	isErr, hasDur                                          chproto.ColUInt8
	dur                                                    chproto.ColFloat64
	seq                                                    chproto.ColUInt64
	method, errType, client, clientVer, serv, proto, node  *native.LCInput
	errKind                                                *native.LCInput
	attrK, attrV                                           *chproto.ColArr[string]
	input                                                  chproto.Input
	rows                                                   int
	keys                                                   []string // an item's attribute keys, sorted
}

func newEventBlock() *eventBlock {
	b := &eventBlock{method: new(native.LCInput), errType: new(native.LCInput), client: new(native.LCInput),
		clientVer: new(native.LCInput), serv: new(native.LCInput), proto: new(native.LCInput), node: new(native.LCInput),
		errKind: new(native.LCInput),
		attrK:   new(chproto.ColStr).Array(), attrV: new(chproto.ColStr).Array()}
	b.ts.Location, b.received.Location = time.UTC, time.UTC
	cols := []chproto.ColInput{&b.account, &b.mcp, &b.ts, &b.ms, &b.received, &b.id, &b.session, b.method, &b.name,
		&b.isErr, b.errType, &b.errMsg, &b.dur, &b.hasDur, b.client, b.clientVer,
		b.serv, b.proto, &b.user, &b.userKey, b.attrK, b.attrV, b.node, &b.seq,
		b.errKind, &b.respBytes, &b.argsHash, &b.idUUID}
	for i, name := range strings.Split(EventColumns, ",") {
		b.input = append(b.input, chproto.InputColumn{Name: strings.TrimSpace(name), Data: cols[i]})
	}
	return b
}

// reset empties the columns, dropping what refers to the last insert's
// rows (the LowCardinality columns' indexes hold their strings).
func (b *eventBlock) reset() {
	for _, c := range b.input {
		c.Data.(chproto.Resettable).Reset()
	}
	b.rows = 0
}

// add appends one row.
func (b *eventBlock) add(r *analytics.StoredRow) {
	it := &r.Item
	t := it.Timestamp.UTC()
	b.account.Append(r.AccountID)
	b.mcp.Append(r.MCPID)
	b.ts.Data = append(b.ts.Data, chproto.DateTime(t.Unix()))
	b.ms.Append(uint16(t.Nanosecond() / int(time.Millisecond)))
	b.received.Data = append(b.received.Data, chproto.DateTime(r.ReceivedAt.Unix()))
	// An id in the canonical UUID form (what the SDKs make) is stored as
	// its 16 bytes in id_uuid, with "" in id (migration 013); any other id
	// as it came, with the zero UUID.
	if u, ok := canonicalUUID(it.ID); ok {
		b.id.Append("")
		b.idUUID.Append(u)
	} else {
		b.id.Append(it.ID)
		b.idUUID.Append(uuid.UUID{})
	}
	b.session.Append(it.SessionID)
	b.method.Append(it.Method)
	b.name.Append(it.Name)
	b.isErr.Append(boolByte(it.Status == analytics.StatusError || it.ErrorType != ""))
	b.errType.Append(it.ErrorType)
	b.errMsg.Append(it.ErrorMessage)
	var dur float64
	if it.DurationMs != nil {
		dur = *it.DurationMs
	}
	b.dur.Append(dur)
	b.hasDur.Append(boolByte(it.DurationMs != nil))
	b.client.Append(it.ClientName)
	b.clientVer.Append(it.ClientVersion)
	b.serv.Append(it.ServerVersion)
	b.proto.Append(it.ProtocolVersion)
	b.user.Append(it.UserID)
	appendUserKey(&b.userKey, it.UserID, it.SessionID)
	b.addAttributes(it.Attributes)
	b.node.Append(r.Node)
	b.seq.Append(r.Seq)
	b.errKind.Append(it.ErrorKind)
	resp := int64(-1) // not measured (migration 009)
	if it.ResponseBytes != nil {
		resp = *it.ResponseBytes
	}
	b.respBytes.Append(resp)
	b.argsHash.Append(it.ArgsHash)
	b.rows++
}

// appendUserKey appends UserKey(userID, sessionID) without making it.
func appendUserKey(c *chproto.ColStr, userID, sessionID string) {
	start := len(c.Buf)
	if userID != "" {
		c.Buf = append(append(c.Buf, "u:"...), userID...)
	} else {
		c.Buf = append(append(c.Buf, "s:"...), sessionID...)
	}
	c.Pos = append(c.Pos, chproto.Position{Start: start, End: len(c.Buf)})
}

// addAttributes appends the attributes as parallel key and value arrays,
// sorted by key so that equal maps store equally.
func (b *eventBlock) addAttributes(attrs map[string]string) {
	if len(attrs) == 1 { // one key is sorted: no slice, no second lookup
		for k, v := range attrs {
			b.attrK.Data.Append(k)
			b.attrV.Data.Append(v)
		}
	} else if len(attrs) > 1 {
		b.keys = b.keys[:0]
		for k := range attrs {
			b.keys = append(b.keys, k)
		}
		slices.Sort(b.keys)
		for _, k := range b.keys {
			b.attrK.Data.Append(k)
			b.attrV.Data.Append(attrs[k])
		}
	}
	b.attrK.Offsets.Append(uint64(b.attrK.Data.Rows()))
	b.attrV.Offsets.Append(uint64(b.attrV.Data.Rows()))
}

func boolByte(v bool) uint8 {
	if v {
		return 1
	}
	return 0
}

// inserts are the Sink's idle insert connections and a spare block.
type inserts struct {
	conns native.Pool
	mu    sync.Mutex
	spare *eventBlock
}

// takeBlock returns the spare block, or a new one when another insert
// holds it.
func (s *inserts) takeBlock() *eventBlock {
	s.mu.Lock()
	b := s.spare
	s.spare = nil
	s.mu.Unlock()
	if b == nil {
		b = newEventBlock()
	}
	return b
}

func (s *inserts) putBlock(b *eventBlock) {
	b.reset()
	s.mu.Lock()
	s.spare = b
	s.mu.Unlock()
}

// sendBlock inserts b into events under the query id id. An idle
// connection that fails before the block is sent is replaced and the
// insert sent again: the server stored nothing of it.
func (db *Sink) sendBlock(ctx context.Context, id string, b *eventBlock) error {
	query := "INSERT INTO " + db.db + ".events (" + EventColumns + ")"
	settings := protoSettings(db.insertSettings())
	err := db.ins.conns.Run(ctx, func(c *native.Conn) error {
		return c.Insert(ctx, id, query+" FORMAT Native", settings, b.input, b.rows)
	}, func(err error) bool { return errors.Is(err, native.ErrBeforeData) })
	if err != nil {
		return wrapErr("insert events", err)
	}
	if db.knobs.proveInsert != nil {
		db.knobs.proveInsert(query, b.input, b.rows)
	}
	return nil
}

// protoSettings are settings as the query packet carries them.
func protoSettings(s clickhouse.Settings) proto.Settings {
	out := make(proto.Settings, 0, len(s))
	for k, v := range s {
		out = append(out, proto.Setting{Key: k, Value: v})
	}
	slices.SortFunc(out, func(a, b proto.Setting) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// canonicalUUID parses id when it is a non-zero UUID written exactly as
// ClickHouse's toString(UUID) writes it back (36 characters, lower-case
// hex, dashes at 8, 13, 18 and 23), so that EventID reads the same string.
func canonicalUUID(id string) (uuid.UUID, bool) {
	if len(id) != 36 {
		return uuid.UUID{}, false
	}
	for i := 0; i < 36; i++ {
		c := id[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return uuid.UUID{}, false
			}
		default:
			if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
				return uuid.UUID{}, false
			}
		}
	}
	u, err := uuid.Parse(id)
	if err != nil || u == (uuid.UUID{}) {
		return uuid.UUID{}, false
	}
	return u, true
}
