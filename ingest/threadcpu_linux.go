package ingest

import (
	"syscall"
	"time"
	"unsafe"
)

// threadCPU is the calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID):
// unlike the wall clock, it does not count time the thread waited for a
// core, so a busy machine does not turn a payload's redaction over budget.
// Call it with the goroutine locked to its thread.
func threadCPU() time.Duration {
	const clockThreadCPUTime = 3
	var ts syscall.Timespec
	if _, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		return monotonic()
	}
	return time.Duration(ts.Nano())
}
