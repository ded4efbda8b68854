package main

import (
	"context"
	"fmt"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// openCH opens a native ClickHouse connection of the benchmark's own, for
// what the store does not offer: counting rows while the service drains,
// the raw-table aggregates the reads are compared with, and waiting for
// merges.
func openCH(ctx context.Context, addr string) (driver.Conn, error) {
	conn, err := clickhouse.Open(&clickhouse.Options{
		Protocol:    clickhouse.Native,
		Addr:        []string{addr},
		Auth:        clickhouse.Auth{Database: "default", Username: "default"},
		Compression: &clickhouse.Compression{Method: clickhouse.CompressionLZ4},
		DialTimeout: 10 * time.Second,
		ReadTimeout: 30 * time.Minute,
	})
	if err != nil {
		return nil, err
	}
	if err := conn.Ping(ctx); err != nil {
		conn.Close()
		return nil, fmt.Errorf("clickhouse %s: %w", addr, err)
	}
	return conn, nil
}

// eventCounter counts one MCP's rows in the events table.
type eventCounter struct {
	conn    driver.Conn
	db, mcp string
}

func openEventCounter(ctx context.Context, addr, db, mcp string) (*eventCounter, error) {
	conn, err := openCH(ctx, addr)
	if err != nil {
		return nil, err
	}
	return &eventCounter{conn: conn, db: db, mcp: mcp}, nil
}

func (c *eventCounter) count(ctx context.Context) (uint64, error) {
	var n uint64
	err := c.conn.QueryRow(ctx, "SELECT count() FROM "+c.db+".events WHERE mcp_id = ?", c.mcp).Scan(&n)
	return n, err
}

func (c *eventCounter) close() { c.conn.Close() }

// waitForMerges waits until ClickHouse runs no merge on db ("": on any
// database) for a few seconds in a row (or limit passes), printing
// progress: reads right after a bulk load would otherwise measure parts
// that production has long merged.
func waitForMerges(ctx context.Context, conn driver.Conn, db string, limit time.Duration, p *progress) error {
	start := time.Now()
	quiet := 0
	for time.Since(start) < limit {
		var merges, parts uint64
		if err := conn.QueryRow(ctx, "SELECT count() FROM system.merges WHERE database = ? OR ? = ''", db, db).Scan(&merges); err != nil {
			return err
		}
		if err := conn.QueryRow(ctx, "SELECT count() FROM system.parts WHERE (database = ? OR ? = '') AND active", db, db).Scan(&parts); err != nil {
			return err
		}
		if merges == 0 {
			quiet++
			if quiet >= 5 {
				p.printf(true, "  merges settled after %.0f s (%d active parts)\n", time.Since(start).Seconds(), parts)
				return nil
			}
		} else {
			quiet = 0
		}
		p.printf(false, "  waiting for background merges: %d running, %d active parts, %.0f s\n", merges, parts, time.Since(start).Seconds())
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
	p.printf(true, "  merges still running after %v; measuring anyway\n", limit)
	return nil
}
