package native

import (
	"context"
	"errors"
	"net"
	"testing"
)

// TestPoolClosedRefuses checks that a closed pool dials nothing: Run
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
	ran := false
	if err := p.Run(context.Background(), func(*Conn) error { ran = true; return nil }, nil); !errors.Is(err, ErrClosed) || ran {
		t.Fatalf("Run after Close: %v (ran %v); want ErrClosed", err, ran)
	}
	client, server := net.Pipe()
	defer server.Close()
	p.put(&Conn{conn: client})
	if n := p.BreakIdle(); n != 0 {
		t.Fatalf("%d idle connections kept after Close", n)
	}
	if _, err := client.Write([]byte{0}); err == nil {
		t.Fatal("the connection put back after Close is still open")
	}
}
