package wal

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"
)

// BenchmarkAppendParallel appends 30 KiB records (the size of a 500-item
// ingest batch) from many goroutines, as concurrent HTTP handlers do, while
// a flusher reads and acknowledges them. It reports throughput (MB/s) and
// how many appends shared each fsync.
func BenchmarkAppendParallel(b *testing.B) {
	l := openLog(b, b.TempDir(), Options{})
	ctx := context.Background()
	flusherDone := make(chan struct{})
	go func() {
		defer close(flusherDone)
		var after uint64
		for {
			recs, err := l.Read(ctx, after, 8<<20, 50*time.Millisecond)
			if err != nil {
				return // ErrClosed
			}
			if len(recs) > 0 {
				after = recs[len(recs)-1].Seq
				if err := l.Ack(after); err != nil {
					return
				}
			}
		}
	}()

	rec := make([]byte, 30<<10)
	for i := range rec {
		rec[i] = byte(i * 7)
	}
	b.SetBytes(int64(len(rec)))
	b.SetParallelism(16) // goroutines per core: many handlers waiting on fsync
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			for {
				_, _, err := l.Append(ctx, rec)
				if errors.Is(err, ErrFull) { // the flusher is behind
					runtime.Gosched()
					continue
				}
				if err != nil {
					b.Error(err)
					return
				}
				break
			}
		}
	})
	b.StopTimer()
	if syncs := l.Stats().Syncs; syncs > 0 {
		b.ReportMetric(float64(b.N)/float64(syncs), "appends/fsync")
	}
	l.Close()
	<-flusherDone
}
