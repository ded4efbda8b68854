//go:build !linux

package ingest

import "time"

// threadCPU falls back to the monotonic clock where the thread's CPU
// clock is not read.
func threadCPU() time.Duration { return monotonic() }
