// Package wal is the ingest path's write-ahead log: the reason "202 means
// durable" holds. The HTTP handler appends an accepted batch and answers only
// after Append returns, which is after the bytes are fsynced; a flusher reads
// the records back, stores them in ClickHouse and acknowledges them; on start
// the records not yet acknowledged are read again, so a crash of the service
// or an outage of ClickHouse loses nothing.
//
// # Group commit
//
// An fsync costs milliseconds, far more than writing a batch. One fsync per
// request would cap ingest at a few hundred requests per second per disk, so
// a single writer goroutine takes every append queued while its previous
// fsync ran, writes them together and syncs once for all of them. Under load
// many callers share each fsync (Stats.Syncs shows it); an idle log still
// answers a lone caller after one write and one sync.
//
// # Checkpoint
//
// Ack writes the highest acknowledged sequence number to a small checkpoint
// file, replaced atomically (temporary file, fsync, rename, directory
// fsync). Segment files are deleted only once all their records are
// acknowledged, so a segment usually holds some acknowledged records ahead
// of unacknowledged ones; the checkpoint says where reading resumes after a
// restart, so ClickHouse does not receive those records twice. It also keeps
// sequence numbers increasing across restarts when every segment is gone.
//
// # Layout on disk
//
// The directory holds segment files named after their first sequence number
// (00000000000000000001.wal), the checkpoint, and a LOCK file that keeps a
// second process out. A segment is a series of frames: CRC32C, length,
// sequence number, append time, payload (see record.go). A new segment
// starts when the current one reaches Options.SegmentBytes; its directory
// entry is fsynced before any record goes in.
//
// # Identity
//
// A new directory gets an identity file: 16 random hex digits, made once.
// Sequence numbers restart at 1 when a directory is replaced, so callers key
// stored records by identity and sequence number (ID), never by the number
// alone. A directory from before identities keeps the empty identity.
//
// # Recovery
//
// Open scans every segment and checks each frame. A bad frame at the end of
// the last segment with nothing valid after it is what a crash in mid-write
// leaves: that tail was never synced, so no Append returned for it, and it is
// truncated and logged. Anywhere else, damaged bytes are repaired frame by
// frame (repair.go): every valid record after them is found again (CRC and
// sequence number) and kept, the records they destroyed are replaced by lost
// frames with their sequence numbers (Read returns them with Record.Lost),
// and the original file is kept as NAME.damaged. Verify reports all of this
// without changing anything (telemetryd wal verify). A missing segment or a
// bad checkpoint is still an error wrapping ErrCorrupt that names the file.
//
// # Write failures
//
// A failed write or fsync refuses the appends of that commit round with
// ErrWrite, and the writer cuts the active segment back to its last synced
// record; the next round tries again, so a full disk stops refusing appends
// as soon as space is freed. Health reports the last round's failure.
package wal
