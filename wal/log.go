package wal

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Default sizes, used when Options leaves them zero.
const (
	DefaultSegmentBytes = 64 << 20
	DefaultMaxBytes     = 1 << 30
)

var (
	// ErrFull is returned by Append when the records would take the
	// unacknowledged data over Options.MaxBytes. It is temporary: the flusher
	// frees space as ClickHouse acknowledges records, so the caller should
	// answer 503 with Retry-After.
	ErrFull = errors.New("wal: log is full")
	// ErrClosed is returned by every method called after Close.
	ErrClosed = errors.New("wal: log is closed")
	// ErrWrite is wrapped by Append's error when the records could not be
	// written or fsynced (disk full, I/O error): they are not in the log.
	// It is temporary: the next append tries again, so the caller should
	// answer 503 with Retry-After.
	ErrWrite = errors.New("wal: write failed")
)

// Options tune a Log. The zero value is valid.
type Options struct {
	// SegmentBytes is the size at which the log starts a new segment file.
	// Space is given back to the disk a whole segment at a time. A record
	// larger than this gets a segment of its own. Default 64 MiB.
	SegmentBytes int64
	// MaxBytes bounds the unacknowledged data (records plus 24 bytes of
	// framing each); Append returns ErrFull beyond it. Disk use can exceed it
	// by up to one segment of acknowledged records. Default 1 GiB.
	MaxBytes int64
	// Logger receives repairs and write failures. Default slog.Default().
	Logger *slog.Logger
}

func (o Options) withDefaults() (Options, error) {
	if o.SegmentBytes == 0 {
		o.SegmentBytes = DefaultSegmentBytes
	}
	if o.MaxBytes == 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.SegmentBytes < 0 || o.MaxBytes < 0 {
		return o, fmt.Errorf("wal: negative size in options (SegmentBytes %d, MaxBytes %d)", o.SegmentBytes, o.MaxBytes)
	}
	return o, nil
}

// Stats describe the log's backlog, for metrics and health checks.
type Stats struct {
	// UnackedBytes and UnackedRecords count committed records not yet
	// acknowledged; bytes include the 24-byte frame headers.
	UnackedBytes   int64
	UnackedRecords int64
	// OldestUnacked is when the oldest unacknowledged record was appended;
	// zero when everything is acknowledged. Its age is the flusher's lag.
	OldestUnacked time.Time
	// Segments is the number of segment files.
	Segments int
	// Syncs counts data fsyncs since Open. With group commit it grows much
	// slower than the number of Append calls under concurrent load.
	Syncs int64
	// SyncTime is the data fsyncs' durations: how long a commit waits for
	// the disk.
	SyncTime SyncTime
	// WriteFailures counts commit rounds whose write or fsync failed.
	WriteFailures int64
	// LostRecords counts the records Open found destroyed by damage in the
	// middle of the log (not a torn tail) and marked lost.
	LostRecords int64
}

// SyncBounds are the upper bounds, in seconds, of SyncTime's buckets.
var SyncBounds = [...]float64{.0005, .001, .0025, .005, .0075, .01, .015, .02, .025, .03, .04, .05, .06, .075, .1, .15, .25, .5, 1}

// SyncTime counts data fsyncs by duration: Buckets[i] those that took
// more than SyncBounds[i-1] and at most SyncBounds[i], Over those that
// took longer than the last bound; Seconds is their total.
type SyncTime struct {
	Buckets [len(SyncBounds)]int64
	Over    int64
	Seconds float64
}

func (t *SyncTime) add(d time.Duration) {
	s := d.Seconds()
	t.Seconds += s
	for i, b := range SyncBounds {
		if s <= b {
			t.Buckets[i]++
			return
		}
	}
	t.Over++
}

// Health reports the last commit round's write failure, nil when it
// succeeded (or nothing was written yet): /health shows it.
func (l *Log) Health() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.writeErr
}

// Log is a durable, append-only log of opaque records. It is safe for
// concurrent use.
type Log struct {
	dir  string
	id   string
	opts Options
	log  *slog.Logger
	lock *os.File

	mu            sync.Mutex
	closed        bool
	err           error         // set while the writer cannot cut a failed write back; appends fail without a try
	writeErr      error         // the last commit round's failure, nil once a round succeeds
	writeFailures int64         // failed commit rounds since Open
	lostRecords   int64         // records Open found destroyed by damage and marked lost
	segs          []*segment    // oldest first; the last one is the active segment
	acked         uint64        // highest acknowledged sequence number
	lastSeq       uint64        // highest committed sequence number (>= acked)
	ackPos        int64         // log position of record acked+1, or the end
	oldest        time.Time     // append time of record acked+1
	reserved      int64         // bytes of queued appends, counted against MaxBytes
	pending       []*appendReq  // appends waiting for the writer
	notify        chan struct{} // closed and replaced at every commit, to wake readers
	syncs         int64
	syncTime      SyncTime

	wake       chan struct{} // nudges the writer; capacity 1
	done       chan struct{} // closed by Close
	writerDone chan struct{}

	// Writer state, owned by the writer goroutine (and Open before it).
	active   *segment
	wf       *os.File
	wbuf     []byte       // sealed frames not yet written
	wOff     int64        // bytes written to the active segment, synced or not
	wLastIdx int64        // offset of the active segment's last index entry, -1 if none
	wIndex   []indexEntry // index entries of written but unpublished records
	nextSeq  uint64
	sync     func(*os.File) error // (*os.File).Sync; tests replace it

	ioMu sync.Mutex // serializes Read and Ack, which share the cursor and read handles
	cur  cursor

	closeOnce sync.Once
	closeErr  error
}

// Open opens the log in dir, creating dir if needed, and recovers its state:
// a torn record at the end of the last segment (a crash in mid-write) is cut
// off and logged; damage anywhere else is an error wrapping ErrCorrupt that
// names the file. Only one process may have a directory open at a time.
func Open(dir string, opts Options) (*Log, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := makeDir(dir); err != nil {
		return nil, fmt.Errorf("wal: %w", err)
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	id, err := loadIdentity(dir)
	if err != nil {
		lock.Close()
		return nil, err
	}
	l := &Log{
		dir:        dir,
		id:         id,
		opts:       opts,
		log:        opts.Logger,
		lock:       lock,
		notify:     make(chan struct{}),
		wake:       make(chan struct{}, 1),
		done:       make(chan struct{}),
		writerDone: make(chan struct{}),
		sync:       (*os.File).Sync,
	}
	if err := l.recover(); err != nil {
		if l.wf != nil {
			l.wf.Close()
		}
		for _, s := range l.segs {
			if s.rf != nil {
				s.rf.Close()
			}
		}
		lock.Close()
		return nil, err
	}
	go l.run()
	return l, nil
}

// makeDir creates dir if needed, durably: records appended right after the
// first start must not vanish with a directory entry lost in a crash.
func makeDir(dir string) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	return syncDir(filepath.Dir(filepath.Clean(dir)))
}

// recover rebuilds the in-memory state from the checkpoint and the segment
// files, and opens the active segment for writing.
func (l *Log) recover() error {
	acked, err := readCheckpoint(l.dir)
	if err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(l.dir, checkpointTemp)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("wal: %w", err)
	}
	segs, err := listSegments(l.dir)
	if err != nil {
		return fmt.Errorf("wal: %w", err)
	}
	// A segment followed by one that starts at or below acked+1 holds only
	// acknowledged records: a crash came between the checkpoint and the
	// deletion.
	for len(segs) > 1 && segs[1].base <= acked+1 {
		if err := os.Remove(segs[0].path); err != nil {
			return fmt.Errorf("wal: %w", err)
		}
		segs = segs[1:]
	}
	// Segments are deleted only after their records are acknowledged, so
	// whatever precedes the first one was acknowledged.
	if len(segs) > 0 && segs[0].base-1 > acked {
		l.log.Warn("wal: checkpoint behind the oldest segment, starting after it", "checkpoint", acked, "segment", segs[0].path)
		acked = segs[0].base - 1
	}

	pos, err := l.scanSegments(segs)
	if err != nil {
		return err
	}

	// The last segment stays active only if the next record continues it;
	// otherwise (it is empty under another name, or the checkpoint is ahead
	// of all it holds) it is acknowledged garbage.
	l.nextSeq = acked + 1
	if n := len(segs); n > 0 {
		tail := segs[n-1]
		l.nextSeq = max(l.nextSeq, tail.last+1)
		if tail.last+1 != l.nextSeq {
			if err := os.Remove(tail.path); err != nil {
				return fmt.Errorf("wal: %w", err)
			}
			segs = segs[:n-1]
			pos = tail.startPos
		}
	}
	if n := len(segs); n > 0 {
		l.active = segs[n-1]
		if l.wf, err = os.OpenFile(l.active.path, os.O_WRONLY, 0); err != nil {
			return fmt.Errorf("wal: %w", err)
		}
	} else {
		if l.active, l.wf, err = createSegment(l.dir, l.nextSeq, pos); err != nil {
			return err
		}
		segs = append(segs, l.active)
	}
	l.segs = segs
	l.acked = acked
	l.lastSeq = l.nextSeq - 1
	l.wOff = l.active.size
	l.wLastIdx = l.active.lastIndexed()
	l.ackPos, l.oldest = l.endPos(), time.Time{}
	if acked < l.lastSeq {
		return l.findUnacked(acked)
	}
	return nil
}

// scanSegments validates the segments, which must follow each other, and
// sets their positions in the log; it returns the position after them.
func (l *Log) scanSegments(segs []*segment) (int64, error) {
	var pos int64
	for i, s := range segs {
		if i > 0 && s.base != segs[i-1].last+1 {
			return 0, fmt.Errorf("%w: %s starts at sequence %d but %s ends at %d", ErrCorrupt, s.path, s.base, segs[i-1].path, segs[i-1].last)
		}
		s.startPos = pos
		var nextBase uint64
		if i+1 < len(segs) {
			nextBase = segs[i+1].base
		}
		if err := l.scanSegment(s, nextBase); err != nil {
			return 0, err
		}
		pos += s.size
	}
	return pos, nil
}

// findUnacked sets the position and time of the first unacknowledged
// record, the one after acked.
func (l *Log) findUnacked(acked uint64) error {
	view := l.viewLocked()
	i, off, err := l.find(view, acked+1)
	if err == nil {
		var h header
		h, err = l.headerAt(view[i].seg, off)
		l.ackPos, l.oldest = view[i].seg.startPos+off, time.Unix(0, h.nanos)
		if h.nanos == lostNanos {
			l.oldest = time.Now()
		}
	}
	return err
}

// scanSegment validates one segment file. Damage is repaired frame by
// frame (see repairSegment): a torn tail of the newest segment is cut, and
// elsewhere every valid record is kept and the destroyed ones are marked
// lost. nextBase is the following segment's first sequence number, 0 for
// the newest segment.
func (l *Log) scanSegment(s *segment, nextBase uint64) error {
	err := scanFile(s)
	var ce *corruptError
	if !errors.As(err, &ce) {
		return err
	}
	damages, err := l.repairSegment(s, nextBase)
	if err != nil {
		return err
	}
	for _, d := range damages {
		if !d.TornTail && d.FirstLost <= d.LastLost {
			l.lostRecords += int64(d.LastLost - d.FirstLost + 1)
		}
	}
	if err := scanFile(s); err != nil {
		return fmt.Errorf("wal: %s after repair: %w", s.path, err)
	}
	return nil
}

// scanFile runs segment.scan over the segment's file.
func scanFile(s *segment) error {
	f, err := os.Open(s.path)
	if err != nil {
		return fmt.Errorf("wal: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("wal: %w", err)
	}
	return s.scan(f, fi.Size(), nil)
}

// createSegment creates the file for a segment whose first record will be
// base, and makes its directory entry durable before any record goes in.
func createSegment(dir string, base uint64, startPos int64) (*segment, *os.File, error) {
	s := &segment{base: base, last: base - 1, path: filepath.Join(dir, segmentName(base)), startPos: startPos}
	f, err := os.OpenFile(s.path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("wal: new segment: %w", err)
	}
	if err := syncDir(dir); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("wal: new segment: %w", err)
	}
	return s, f, nil
}

// endPos is the log position just past the last committed record. Callers
// hold l.mu (or own the log exclusively).
func (l *Log) endPos() int64 {
	tail := l.segs[len(l.segs)-1]
	return tail.startPos + tail.size
}

// Acked returns the highest acknowledged sequence number (0 if none).
func (l *Log) Acked() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.acked
}

// LastSeq returns the highest committed sequence number (0 if none). After a
// restart it is at least Acked(), so new records never reuse a number.
func (l *Log) LastSeq() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastSeq
}

// Stats returns the backlog figures.
func (l *Log) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return Stats{
		UnackedBytes:   l.endPos() - l.ackPos,
		UnackedRecords: int64(l.lastSeq - l.acked),
		OldestUnacked:  l.oldest,
		Segments:       len(l.segs),
		Syncs:          l.syncs,
		SyncTime:       l.syncTime,
		WriteFailures:  l.writeFailures,
		LostRecords:    l.lostRecords,
	}
}

// Close commits the appends already queued, stops the writer and closes the
// files. Later calls return the first call's result.
func (l *Log) Close() error {
	l.closeOnce.Do(func() {
		l.mu.Lock()
		l.closed = true
		l.mu.Unlock()
		close(l.done)
		<-l.writerDone

		errs := []error{l.wf.Close()}
		l.ioMu.Lock()
		l.mu.Lock()
		for _, s := range l.segs {
			if s.rf != nil {
				errs = append(errs, s.rf.Close())
				s.rf = nil
			}
		}
		l.mu.Unlock()
		l.cur = cursor{}
		l.ioMu.Unlock()
		errs = append(errs, l.lock.Close())
		if err := errors.Join(errs...); err != nil {
			l.closeErr = fmt.Errorf("wal: close: %w", err)
		}
	})
	return l.closeErr
}
