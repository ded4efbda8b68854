package postgres_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/mcpscope/telemetry/internal/testkit/testenv"
)

// cpuMeter reports the CPU a benchmark's operations took, beside their
// wall time, which a shared machine's load moves far more: this
// process's (the service's side of a pass) and the ClickHouse server's
// (its UserTimeMicroseconds and SystemTimeMicroseconds events, every
// query of the server: the benchmark's own, on a test server).
type cpuMeter struct {
	conn          driver.Conn
	proc, server  time.Duration
	procAt, srvAt time.Duration
}

func newCPUMeter(b *testing.B) *cpuMeter {
	conn, err := ch.Open(&ch.Options{Addr: []string{testenv.ClickHouseAddr(b)}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close() })
	return &cpuMeter{conn: conn}
}

func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func (m *cpuMeter) serverCPU(b *testing.B) time.Duration {
	var us uint64
	err := m.conn.QueryRow(context.Background(), `SELECT sum(value) FROM system.events
		WHERE event IN ('UserTimeMicroseconds', 'SystemTimeMicroseconds')`).Scan(&us)
	if err != nil {
		b.Fatal(err)
	}
	return time.Duration(us) * time.Microsecond
}

// start and stop bracket the measured operations (with the timer).
func (m *cpuMeter) start(b *testing.B) {
	m.procAt, m.srvAt = processCPU(b), m.serverCPU(b)
}

func (m *cpuMeter) stop(b *testing.B) {
	m.proc += processCPU(b) - m.procAt
	m.server += m.serverCPU(b) - m.srvAt
}

// report adds the CPU per operation to the benchmark's line, in ms.
func (m *cpuMeter) report(b *testing.B) {
	n := float64(b.N)
	b.ReportMetric(float64(m.proc)/float64(time.Millisecond)/n, "go-cpu-ms/op")
	b.ReportMetric(float64(m.server)/float64(time.Millisecond)/n, "ch-cpu-ms/op")
}
