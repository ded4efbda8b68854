package native

import (
	"context"
	"errors"
	"net"
	"testing"
)

// TestPoolClosedRefuses checks that a closed pool dials nothing: Get
// fails with ErrClosed even with a listening address, and a connection
// put back after Close is closed, not kept.
func TestPoolClosedRefuses(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	p := &Pool{Options: Options{Addrs: []string{ln.Addr().String()}}}
	p.Close()
	if c, _, err := p.Get(context.Background()); !errors.Is(err, ErrClosed) || c != nil {
		t.Fatalf("Get after Close: %v, %v; want ErrClosed", c, err)
	}
	client, server := net.Pipe()
	defer server.Close()
	p.Put(&Conn{conn: client})
	if n := p.BreakIdle(); n != 0 {
		t.Fatalf("%d idle connections kept after Close", n)
	}
	if _, err := client.Write([]byte{0}); err == nil {
		t.Fatal("the connection put back after Close is still open")
	}
}
