package native

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"strings"
	"testing"

	chproto "github.com/ClickHouse/ch-go/proto"
)

// TestColStrMemoryFollowsBytes decodes a String column whose first row is
// 512 KiB and whose other 65,535 rows are short: the buffer must stay
// proportional to the bytes read (a buffer sized by the first string times
// the rows left would be 32 GiB). A length that claims more than the
// stream holds fails without reserving what it claims.
func TestColStrMemoryFollowsBytes(t *testing.T) {
	const rows, long = 65536, 512 << 10
	var wire bytes.Buffer
	put := func(s string) {
		wire.Write(binary.AppendUvarint(nil, uint64(len(s))))
		wire.WriteString(s)
	}
	put(strings.Repeat("x", long))
	for i := 1; i < rows; i++ {
		put("ab")
	}
	total := long + 2*(rows-1)
	src := &Source{br: bufio.NewReaderSize(bytes.NewReader(wire.Bytes()), 256<<10)}
	c := &Str{src: src}
	if err := c.DecodeColumn(chproto.NewReader(src.br), rows); err != nil {
		t.Fatal(err)
	}
	if len(c.Pos) != rows || strAt(&c.ColStr, 0) != strings.Repeat("x", long) || strAt(&c.ColStr, rows-1) != "ab" {
		t.Fatalf("decoded %d rows, wrong cells", len(c.Pos))
	}
	if cap(c.Buf) > 3*total {
		t.Fatalf("buffer of %d bytes for %d bytes of strings", cap(c.Buf), total)
	}

	// A claim of 1 GiB backed by 10 bytes.
	buf, err := readGrowing(strings.NewReader("0123456789"), nil, 1<<30)
	if err == nil {
		t.Fatal("a truncated string was read")
	}
	if cap(buf) > 2*readChunk {
		t.Fatalf("a claim of 1 GiB reserved %d bytes", cap(buf))
	}
}
