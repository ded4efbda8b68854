package wal

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// writeChunk is how many bytes of frames the writer gathers before a write
// system call; it bounds the writer's buffer whatever the batch size.
const writeChunk = 1 << 20

// framesPool keeps Append's frame buffers: the writer copies each round's
// frames into its own buffer, so they are free again once it answered.
var framesPool = sync.Pool{New: func() any { return new([]byte) }}

// putFrames returns a frame buffer holding frames to framesPool, unless
// it outgrew writeChunk (a huge record went through).
func putFrames(buf *[]byte, frames []byte) {
	if cap(frames) <= writeChunk {
		*buf = frames[:0]
		framesPool.Put(buf)
	}
}

// appendReq is one Append call waiting for the writer.
type appendReq struct {
	frames      []byte  // encoded by appendFrames, sealed by the writer
	buf         *[]byte // frames' buffer, from framesPool
	first, last uint64  // assigned by the writer
	done        chan appendResult
}

type appendResult struct {
	first, last uint64
	err         error
}

// Append adds recs to the log and returns their sequence numbers, which are
// consecutive, once they are on disk (written and fsynced). Concurrent calls
// share one fsync (group commit). recs may be reused as soon as Append
// returns.
//
// It returns ErrFull when the records do not fit in Options.MaxBytes next to
// the unacknowledged ones, and ErrClosed after Close. ctx is honoured only
// until the records are queued: from then on Append waits for the writer's
// answer (bounded by one write and fsync), because a caller told "cancelled"
// while its records go on to be committed would retry and store them twice.
// So an error always means the records are not in the log, and success
// that they are on disk.
func (l *Log) Append(ctx context.Context, recs ...[]byte) (first, last uint64, err error) {
	if len(recs) == 0 {
		return 0, 0, errors.New("wal: Append needs at least one record")
	}
	if err := ctx.Err(); err != nil {
		return 0, 0, err
	}
	size := framesSize(recs)
	if size > l.opts.MaxBytes {
		return 0, 0, fmt.Errorf("wal: %d bytes of records can never fit MaxBytes (%d)", size, l.opts.MaxBytes)
	}
	buf := framesPool.Get().(*[]byte)
	frames, err := appendFrames((*buf)[:0], recs)
	if err != nil {
		putFrames(buf, frames)
		return 0, 0, err
	}
	req := &appendReq{frames: frames, buf: buf, done: make(chan appendResult, 1)}

	l.mu.Lock()
	switch {
	case l.closed:
		err = ErrClosed
	case l.endPos()-l.ackPos+l.reserved+size > l.opts.MaxBytes:
		err = ErrFull
	default:
		l.reserved += size
		l.pending = append(l.pending, req)
	}
	l.mu.Unlock()
	if err != nil {
		putFrames(buf, frames)
		return 0, 0, err
	}
	select {
	case l.wake <- struct{}{}:
	default: // the writer is already nudged
	}

	r := <-req.done
	return r.first, r.last, r.err
}

// run is the writer goroutine. Each round takes every append queued so far
// and commits them with one fsync; appends that arrive during that fsync
// queue up for the next round. The busier the log, the more callers share a
// sync, which is what lets "202 means durable" scale.
func (l *Log) run() {
	defer close(l.writerDone)
	for {
		select {
		case <-l.wake:
			l.commitPending()
		case <-l.done:
			l.commitPending() // Close flushes what was queued before it
			return
		}
	}
}

// beforeCommit runs at the start of each commit round; tests stall the
// writer with it.
var beforeCommit = func() {}

// commitPending commits the queued appends and answers their callers.
//
// A failed write or fsync leaves the active segment's unsynced tail in an
// unknown state (Linux may even drop its dirty pages), so the writer cuts
// the segment back to what was synced before, and the appends of this round
// that were not made durable are answered with an error wrapping ErrWrite.
// Nothing is sticky: the next round writes again, so a disk that was full
// takes appends as soon as space is freed. Only while the cut itself fails
// are appends refused without trying.
func (l *Log) commitPending() {
	beforeCommit()
	l.mu.Lock()
	batch := l.pending
	l.pending = nil
	broken := l.err
	l.mu.Unlock()
	if len(batch) == 0 {
		return
	}

	var total, published int64
	for _, r := range batch {
		total += int64(len(r.frames))
	}
	var err error
	if broken != nil {
		if rerr := l.resetWriter(); rerr != nil {
			err = broken
		}
	}
	if err == nil {
		published, err = l.writeBatch(batch)
		if err != nil {
			err = fmt.Errorf("%w: %w", ErrWrite, err)
			l.log.Error("wal: write failed; the appends of this round are refused", "dir", l.dir, "err", err)
			if rerr := l.resetWriter(); rerr != nil {
				l.log.Error("wal: cannot cut the active segment back to its synced size; refusing appends until it can",
					"dir", l.dir, "err", rerr)
				l.mu.Lock()
				l.err = fmt.Errorf("%w: %w", ErrWrite, errors.Join(err, rerr))
				l.mu.Unlock()
			}
		}
	}
	var committed uint64
	l.mu.Lock()
	if err != nil {
		l.reserved -= total - published
		l.writeErr = err
		l.writeFailures++
	} else {
		l.err, l.writeErr = nil, nil
	}
	committed = l.lastSeq
	l.mu.Unlock()

	for _, r := range batch {
		putFrames(r.buf, r.frames)
		r.frames, r.buf = nil, nil
		if r.last != 0 && r.last <= committed {
			r.done <- appendResult{first: r.first, last: r.last}
		} else {
			r.done <- appendResult{err: err}
		}
	}
}

// resetWriter drops whatever the writer holds beyond the last synced record
// of the active segment: the buffered frames, their index entries and their
// sequence numbers, and the file's unsynced tail, which it truncates and
// syncs. Called by the writer after a failed write or fsync.
func (l *Log) resetWriter() error {
	l.wbuf = l.wbuf[:0]
	l.wIndex = l.wIndex[:0]
	l.mu.Lock()
	s := l.active
	size, last, lastIdx := s.size, s.last, s.lastIndexed()
	l.mu.Unlock()
	l.nextSeq = last + 1
	if err := l.wf.Truncate(size); err != nil {
		return err
	}
	if err := l.sync(l.wf); err != nil {
		return err
	}
	l.wOff, l.wLastIdx = size, lastIdx
	return nil
}

// writeBatch seals, writes and syncs the frames of batch, rotating segments
// as they fill. It returns how many bytes it made durable, even on error.
func (l *Log) writeBatch(batch []*appendReq) (published int64, err error) {
	now := time.Now().UnixNano()
	for _, r := range batch {
		first := l.nextSeq
		for p := int64(0); p < int64(len(r.frames)); {
			fl := parseHeader(r.frames[p:]).frameLen()
			frame := r.frames[p : p+fl]
			if used := l.wOff + int64(len(l.wbuf)); used > 0 && used+fl > l.opts.SegmentBytes {
				n, err := l.syncActive(now)
				published += n
				if err != nil {
					return published, err
				}
				if err := l.rotate(); err != nil {
					return published, err
				}
			}
			off := l.wOff + int64(len(l.wbuf))
			if needsIndex(l.wLastIdx, off) {
				l.wIndex = append(l.wIndex, indexEntry{seq: l.nextSeq, off: off})
				l.wLastIdx = off
			}
			sealFrame(frame, l.nextSeq, now)
			l.wbuf = append(l.wbuf, frame...)
			l.nextSeq++
			p += fl
			if len(l.wbuf) >= writeChunk {
				if err := l.writeBuf(); err != nil {
					return published, err
				}
			}
		}
		r.first, r.last = first, l.nextSeq-1
	}
	n, err := l.syncActive(now)
	return published + n, err
}

// writeBuf writes the gathered frames to the active segment, without sync.
func (l *Log) writeBuf() error {
	if len(l.wbuf) == 0 {
		return nil
	}
	n, err := l.wf.WriteAt(l.wbuf, l.wOff)
	l.wOff += int64(n)
	if cap(l.wbuf) > 2*writeChunk {
		l.wbuf = nil // a huge record went through; don't keep its buffer
	} else {
		l.wbuf = l.wbuf[:0]
	}
	return err
}

// syncActive writes and fsyncs what is pending for the active segment, then
// publishes the records to readers and wakes them. now is the records' time.
func (l *Log) syncActive(now int64) (int64, error) {
	if err := l.writeBuf(); err != nil {
		return 0, err
	}
	s := l.active
	grow := l.wOff - s.size
	if grow == 0 {
		return 0, nil
	}
	t0 := time.Now()
	if err := l.sync(l.wf); err != nil {
		return 0, err
	}
	took := time.Since(t0)
	l.mu.Lock()
	l.syncTime.add(took)
	if l.lastSeq == l.acked {
		l.ackPos, l.oldest = s.startPos+s.size, time.Unix(0, now)
	}
	s.size, s.last = l.wOff, l.nextSeq-1
	s.index = append(s.index, l.wIndex...)
	l.lastSeq = s.last
	l.reserved -= grow
	l.syncs++
	close(l.notify)
	l.notify = make(chan struct{})
	l.mu.Unlock()
	l.wIndex = l.wIndex[:0]
	return grow, nil
}

// rotate starts a new segment for the record l.nextSeq. The old segment is
// already synced.
func (l *Log) rotate() error {
	old := l.active
	s, f, err := createSegment(l.dir, l.nextSeq, old.startPos+old.size)
	if err != nil {
		return err
	}
	if err := l.wf.Close(); err != nil {
		l.log.Warn("wal: closing full segment", "file", old.path, "err", err)
	}
	l.active, l.wf, l.wOff, l.wLastIdx = s, f, 0, -1
	l.mu.Lock()
	l.segs = append(l.segs, s)
	l.mu.Unlock()
	return nil
}
