package native

import (
	"context"
	"errors"
	"sync"
	"time"
)

// ErrClosed is Run's error once the pool is closed: a closed store reads
// and writes nothing, as the driver's closed pool.
var ErrClosed = errors.New("native: connection pool closed")

// Pool keeps a few idle connections for the next query or insert: at most
// MaxIdle, none reused after MaxIdleTime (the server may have dropped
// it; a dropped one fails its next query before anything is stored or
// read, and the caller dials again). The zero MaxIdle keeps 2, the zero
// MaxIdleTime a minute. Dial's Options are Options.
type Pool struct {
	Options     Options
	MaxIdle     int
	MaxIdleTime time.Duration

	mu     sync.Mutex
	idle   []idleConn
	closed bool
}

type idleConn struct {
	c     *Conn
	since time.Time
}

// Run runs fn on an idle connection or a new one, keeps the connection
// for the next Run when fn succeeds and closes it when fn fails. When fn
// fails on an idle connection (the server may have dropped it) and again
// says the failure left nothing done on the server, fn runs again on
// another connection.
func (p *Pool) Run(ctx context.Context, fn func(*Conn) error, again func(error) bool) error {
	for {
		c, reused, err := p.get(ctx)
		if err != nil {
			return err
		}
		if err = fn(c); err == nil {
			p.put(c)
			return nil
		}
		c.Close()
		if !reused || ctx.Err() != nil || !again(err) {
			return err
		}
	}
}

// get returns an idle connection (reused true) or dials one.
func (p *Pool) get(ctx context.Context) (c *Conn, reused bool, err error) {
	maxIdle := p.MaxIdleTime
	if maxIdle <= 0 {
		maxIdle = time.Minute
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, false, ErrClosed
	}
	for len(p.idle) > 0 && c == nil {
		ic := p.idle[len(p.idle)-1]
		p.idle = p.idle[:len(p.idle)-1]
		if time.Since(ic.since) < maxIdle {
			c = ic.c
		} else {
			ic.c.Close()
		}
	}
	p.mu.Unlock()
	if c != nil {
		return c, true, nil
	}
	c, err = Dial(ctx, p.Options)
	return c, false, err
}

// put keeps c, whose last query or insert succeeded, for the next one, or
// closes it when MaxIdle are kept already or the pool is closed.
func (p *Pool) put(c *Conn) {
	keep := p.MaxIdle
	if keep <= 0 {
		keep = 2
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed && len(p.idle) < keep {
		p.idle = append(p.idle, idleConn{c: c, since: time.Now()})
		return
	}
	c.Close()
}

// Close closes the idle connections; Run fails from then on.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for _, ic := range p.idle {
		ic.c.Close()
	}
	p.idle = nil
}

// BreakIdle closes the sockets of the idle connections and leaves them in
// the pool, as a server that dropped them would. It returns how many
// there were. Tests only.
func (p *Pool) BreakIdle() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, ic := range p.idle {
		ic.c.Close()
	}
	return len(p.idle)
}
