package native

import (
	"bytes"
	"fmt"
	"testing"

	chproto "github.com/ClickHouse/ch-go/proto"
)

// LCInput encodes a block byte for byte as ch-go's LowCardinality column
// does, for dictionaries of each key width, and reads its rows back.
func TestLCInputEncodesAsChGo(t *testing.T) {
	for _, distinct := range []int{1, 3, 256, 257, 70000} {
		var mine LCInput
		theirs := new(chproto.ColStr).LowCardinality()
		for round := range 2 { // the second after Reset
			mine.Reset()
			theirs.Reset()
			var want []string
			for i := range 2 * distinct {
				v := fmt.Sprint("v", (i/2)%distinct, "-", round)
				if i%7 == 0 {
					v = ""
				}
				want = append(want, v)
				mine.Append(v)
				theirs.Append(v)
			}
			var a, b chproto.Buffer
			for _, e := range []struct {
				buf *chproto.Buffer
				col chproto.ColInput
			}{{&a, &mine}, {&b, theirs}} {
				block := chproto.Block{Columns: 1, Rows: len(want)}
				if err := block.EncodeRawBlock(e.buf, Revision, chproto.Input{{Name: "c", Data: e.col}}); err != nil {
					t.Fatal(err)
				}
			}
			if !bytes.Equal(a.Buf, b.Buf) {
				t.Fatalf("%d distinct values, round %d: encodings differ (%d and %d bytes)", distinct, round, len(a.Buf), len(b.Buf))
			}
			for i, v := range want {
				if got := mine.Row(i); got != v {
					t.Fatalf("row %d: %q, want %q", i, got, v)
				}
			}
		}
	}
}
