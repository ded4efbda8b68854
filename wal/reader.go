package wal

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"time"
)

// Record is one record read back from the log.
type Record struct {
	Seq  uint64
	Data []byte // owned by the caller
	// Lost is set for a record destroyed by damage on disk: Open found its
	// bytes unreadable and kept its sequence number only; Data is empty.
	Lost bool
}

// cursor remembers where the last Read stopped, so that the flusher's next
// Read continues with one positioned read instead of a search.
type cursor struct {
	seg  *segment
	off  int64  // offset of record next in seg (may equal seg's size)
	next uint64 // sequence number of the record at off
}

// segView is a segment's committed state, copied under Log.mu so that file
// reads can proceed without holding it.
type segView struct {
	seg   *segment
	size  int64
	last  uint64
	index []indexEntry
}

func (l *Log) viewLocked() []segView {
	v := make([]segView, len(l.segs))
	for i, s := range l.segs {
		v[i] = segView{seg: s, size: s.size, last: s.last, index: s.index}
	}
	return v
}

// Read returns committed records with sequence numbers above afterSeq, in
// order, whose encoded size (payload plus 24 bytes each) stays within
// maxBytes, except that it always returns at least one record when there is
// one. Acknowledged records are never returned: reading starts after
// max(afterSeq, Acked()), so a flusher can start from Acked() after Open.
//
// With nothing to return it waits up to wait for an append, then returns an
// empty result and no error. It returns ctx.Err() if ctx ends while waiting,
// and ErrClosed after Close.
//
// Records are read from the segment files (the page cache serves recent
// ones); a flusher reading sequentially costs one read system call per call.
func (l *Log) Read(ctx context.Context, afterSeq uint64, maxBytes int, wait time.Duration) ([]Record, error) {
	if ok, err := l.waitFor(ctx, afterSeq, wait); !ok {
		return nil, err
	}
	l.ioMu.Lock()
	defer l.ioMu.Unlock()
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil, ErrClosed
	}
	next := max(afterSeq, l.acked) + 1
	last := l.lastSeq
	view := l.viewLocked()
	l.mu.Unlock()
	if next > last {
		return nil, nil
	}

	i, off, err := l.find(view, next)
	if err != nil {
		return nil, err
	}
	var recs []Record
	budget := int64(maxBytes)
	for next <= last && (budget > 0 || len(recs) == 0) {
		sv := view[i]
		if off >= sv.size {
			i, off = i+1, 0 // next <= last, so a later segment holds it
			continue
		}
		buf := make([]byte, min(sv.size-off, max(budget, headerSize)))
		if err := l.readAt(sv.seg, buf, off); err != nil {
			return nil, err
		}
		if len(recs) == 0 && len(buf) >= headerSize {
			// The first record is returned even when it exceeds the budget.
			if fl := parseHeader(buf).frameLen(); fl > int64(len(buf)) && fl <= sv.size-off {
				buf = make([]byte, fl)
				if err := l.readAt(sv.seg, buf, off); err != nil {
					return nil, err
				}
			}
		}
		p := int64(0)
		for rest := buf; len(rest) >= headerSize && parseHeader(rest).frameLen() <= int64(len(rest)); rest = buf[p:] {
			h, payload, err := decodeFrame(rest)
			if err == nil && h.seq != next {
				err = fmt.Errorf("sequence number %d, want %d", h.seq, next)
			}
			if err != nil {
				return nil, &corruptError{path: sv.seg.path, off: off + p, reason: err.Error()}
			}
			recs = append(recs, Record{Seq: next, Data: payload[:len(payload):len(payload)],
				Lost: h.nanos == lostNanos && h.length == 0})
			next++
			p += h.frameLen()
		}
		if p == 0 {
			if len(recs) > 0 {
				break // the next record does not fit the budget
			}
			return nil, &corruptError{path: sv.seg.path, off: off, reason: "committed record does not fit its segment"}
		}
		off += p
		budget -= p
		if p < int64(len(buf)) {
			break // the next record does not fit the budget
		}
	}
	l.cur = cursor{seg: view[i].seg, off: off, next: next}
	return recs, nil
}

// waitFor waits until a record above max(afterSeq, acked) is committed. It
// reports false with a nil error on timeout.
func (l *Log) waitFor(ctx context.Context, afterSeq uint64, wait time.Duration) (bool, error) {
	var timeout <-chan time.Time
	for {
		l.mu.Lock()
		closed, ready, notify := l.closed, l.lastSeq > max(afterSeq, l.acked), l.notify
		l.mu.Unlock()
		switch {
		case closed:
			return false, ErrClosed
		case ready:
			return true, nil
		case wait <= 0:
			return false, nil
		}
		if timeout == nil {
			t := time.NewTimer(wait)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-notify:
		case <-timeout:
			return false, nil
		case <-ctx.Done():
			return false, ctx.Err()
		case <-l.done:
			return false, ErrClosed
		}
	}
}

// Ack records that every record up to seq has been stored downstream. The
// position is persisted before Ack returns, so those records are not read
// again after a restart, and segment files holding only acknowledged
// records are deleted (the active segment is kept until it fills). Acking a
// number at or below Acked() does nothing; acking past LastSeq() is an error.
func (l *Log) Ack(seq uint64) error {
	l.ioMu.Lock()
	defer l.ioMu.Unlock()
	l.mu.Lock()
	closed, acked, last := l.closed, l.acked, l.lastSeq
	l.mu.Unlock()
	switch {
	case closed:
		return ErrClosed
	case seq <= acked:
		return nil
	case seq > last:
		return fmt.Errorf("wal: ack of %d beyond the last committed record %d", seq, last)
	}
	if err := writeCheckpoint(l.dir, seq); err != nil {
		return fmt.Errorf("wal: write checkpoint: %w", err)
	}
	if err := l.advance(seq); err != nil {
		return err
	}

	l.mu.Lock()
	k := 0
	for k < len(l.segs)-1 && l.segs[k].last <= seq {
		k++
	}
	removed := l.segs[:k]
	l.segs = slices.Clone(l.segs[k:])
	l.mu.Unlock()
	for _, s := range removed {
		if s.rf != nil {
			s.rf.Close()
			s.rf = nil
		}
		if l.cur.seg == s {
			l.cur = cursor{}
		}
		// Not fatal: Open deletes fully acknowledged segments again.
		if err := os.Remove(s.path); err != nil {
			l.log.Error("wal: deleting acknowledged segment", "file", s.path, "err", err)
		}
	}
	return nil
}

// advance moves the in-memory acknowledged position to seq, finding where
// record seq+1 starts and when it was appended. Called with ioMu held.
func (l *Log) advance(seq uint64) error {
	for {
		l.mu.Lock()
		view, last := l.viewLocked(), l.lastSeq
		l.mu.Unlock()
		var pos int64
		var oldest time.Time
		if seq < last {
			i, off, err := l.find(view, seq+1)
			if err != nil {
				return err
			}
			h, err := l.headerAt(view[i].seg, off)
			if err != nil {
				return err
			}
			pos, oldest = view[i].seg.startPos+off, time.Unix(0, h.nanos)
		}
		l.mu.Lock()
		if seq == last && l.lastSeq != last {
			// The writer committed seq+1 since the view was taken; look again.
			l.mu.Unlock()
			continue
		}
		if seq == last {
			pos = l.endPos()
		}
		l.acked, l.ackPos, l.oldest = seq, pos, oldest
		l.mu.Unlock()
		return nil
	}
}

// find returns the segment (index into view) and offset of record seq, which
// must be committed. The cursor answers the flusher's sequential reads; other
// positions cost a binary search of the sparse index and one read of at most
// indexSpacing bytes. Called with ioMu held.
func (l *Log) find(view []segView, seq uint64) (int, int64, error) {
	if c := l.cur; c.seg != nil && c.next == seq {
		if i := segmentOf(view, c.seg.base); i >= 0 && view[i].seg == c.seg {
			if c.off < view[i].size {
				return i, c.off, nil
			}
			if i+1 < len(view) && view[i+1].seg.base == seq {
				return i + 1, 0, nil
			}
		}
	}
	i := segmentOf(view, seq)
	if i < 0 || seq > view[i].last {
		return 0, 0, fmt.Errorf("wal: record %d is not in the log", seq)
	}
	sv := view[i]
	j := sort.Search(len(sv.index), func(j int) bool { return sv.index[j].seq > seq }) - 1
	e := sv.index[j] // index[0] is the segment's first record, so j >= 0
	// Records between two index entries start less than indexSpacing apart,
	// so this read holds the header of seq and of every record before it.
	buf := make([]byte, min(indexSpacing+headerSize, sv.size-e.off))
	if err := l.readAt(sv.seg, buf, e.off); err != nil {
		return 0, 0, err
	}
	var p int64
	for s := e.seq; ; s++ {
		if int64(len(buf))-p < headerSize {
			return 0, 0, &corruptError{path: sv.seg.path, off: e.off + p, reason: "record outside the index span"}
		}
		h := parseHeader(buf[p:])
		if h.seq != s {
			return 0, 0, &corruptError{path: sv.seg.path, off: e.off + p, reason: fmt.Sprintf("sequence number %d, want %d", h.seq, s)}
		}
		if s == seq {
			return i, e.off + p, nil
		}
		p += h.frameLen()
	}
}

// segmentOf returns the index of the segment that would hold seq, or -1.
func segmentOf(view []segView, seq uint64) int {
	return sort.Search(len(view), func(i int) bool { return view[i].seg.base > seq }) - 1
}

// headerAt reads the frame header at off. Called with ioMu held.
func (l *Log) headerAt(s *segment, off int64) (header, error) {
	var b [headerSize]byte
	if err := l.readAt(s, b[:], off); err != nil {
		return header{}, err
	}
	return parseHeader(b[:]), nil
}

// readAt fills buf from the segment at off, opening its read handle on first
// use. Called with ioMu held.
func (l *Log) readAt(s *segment, buf []byte, off int64) error {
	if s.rf == nil {
		f, err := os.Open(s.path)
		if err != nil {
			return fmt.Errorf("wal: %w", err)
		}
		s.rf = f
	}
	if _, err := s.rf.ReadAt(buf, off); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return fmt.Errorf("wal: read %s at %d: %w", s.path, off, err)
	}
	return nil
}
