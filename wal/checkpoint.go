package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
)

// The checkpoint file holds the highest acknowledged sequence number:
//
//	0:4   magic "WALC"
//	4:12  acknowledged sequence number, uint64 little endian
//	12:16 CRC32C of bytes 0:12
//
// It is replaced atomically (write a temporary file, fsync it, rename it over
// the old one, fsync the directory), so after a crash it holds either the old
// or the new position, never a mix.
const (
	checkpointName  = "checkpoint"
	checkpointTemp  = "checkpoint.tmp"
	checkpointSize  = 16
	checkpointMagic = "WALC"
)

// readCheckpoint returns the acknowledged sequence number stored in dir, or 0
// when there is no checkpoint yet.
func readCheckpoint(dir string) (uint64, error) {
	path := filepath.Join(dir, checkpointName)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if len(b) != checkpointSize || string(b[0:4]) != checkpointMagic ||
		crc32.Checksum(b[:12], castagnoli) != binary.LittleEndian.Uint32(b[12:16]) {
		return 0, fmt.Errorf("%w: %s is not a valid checkpoint", ErrCorrupt, path)
	}
	return binary.LittleEndian.Uint64(b[4:12]), nil
}

// writeCheckpoint durably records acked as the acknowledged position.
func writeCheckpoint(dir string, acked uint64) error {
	var b [checkpointSize]byte
	copy(b[0:4], checkpointMagic)
	binary.LittleEndian.PutUint64(b[4:12], acked)
	binary.LittleEndian.PutUint32(b[12:16], crc32.Checksum(b[:12], castagnoli))

	tmp := filepath.Join(dir, checkpointTemp)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(b[:])
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, checkpointName)); err != nil {
		return err
	}
	return syncDir(dir)
}

// syncDir makes the directory's entries (created, renamed files) durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
