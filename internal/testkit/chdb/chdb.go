// Package chdb runs SQL on ClickHouse 26 in process, through libchdb.so
// (the npm package @chdb/lib-linux-x64-gnu, installed by scripts/chdb.sh),
// loaded with purego: no cgo. Tests use it to prove the store's
// statements on a current ClickHouse (clickhouse/proof26_test.go); the
// service never loads it.
//
// The library holds one ClickHouse per process: Open connects once, later
// calls return the same session, whatever their directory. Queries are
// serialized.
package chdb

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// Session is the in-process ClickHouse.
type Session struct {
	mu   sync.Mutex
	conn unsafe.Pointer // chdb_connection (the value chdb_connect's result points to)
}

var (
	once    sync.Once
	session *Session
	openErr error

	chdbConnect       func(argc int32, argv unsafe.Pointer) unsafe.Pointer
	chdbQuery         func(conn unsafe.Pointer, query, format string) unsafe.Pointer
	chdbResultError   func(res unsafe.Pointer) string
	chdbResultBuffer  func(res unsafe.Pointer) unsafe.Pointer
	chdbResultLength  func(res unsafe.Pointer) uintptr
	chdbDestroyResult func(res unsafe.Pointer)
)

// Open loads the library at libPath and starts ClickHouse with its data in
// dir (created if missing), once per process.
func Open(libPath, dir string) (*Session, error) {
	once.Do(func() { session, openErr = open(libPath, dir) })
	return session, openErr
}

func open(libPath, dir string) (*Session, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	lib, err := purego.Dlopen(libPath, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return nil, fmt.Errorf("chdb: load %s: %w", libPath, err)
	}
	purego.RegisterLibFunc(&chdbConnect, lib, "chdb_connect")
	purego.RegisterLibFunc(&chdbQuery, lib, "chdb_query")
	purego.RegisterLibFunc(&chdbResultError, lib, "chdb_result_error")
	purego.RegisterLibFunc(&chdbResultBuffer, lib, "chdb_result_buffer")
	purego.RegisterLibFunc(&chdbResultLength, lib, "chdb_result_length")
	purego.RegisterLibFunc(&chdbDestroyResult, lib, "chdb_destroy_query_result")
	// One thread a query, no query log: the proof's tables are tiny, and
	// a pipeline of a thread per core costs more than the query itself
	// (a third of the CPU of a small SELECT, measured). Answers do not
	// change: the proof compares rows as multisets.
	args := [][]byte{[]byte("clickhouse\x00"), []byte("--path=" + dir + "\x00"),
		[]byte("--max_threads=1\x00"), []byte("--log_queries=0\x00")}
	argv := make([]*byte, len(args)+1)
	for i, a := range args {
		argv[i] = &a[0]
	}
	pp := chdbConnect(int32(len(args)), unsafe.Pointer(&argv[0]))
	runtime.KeepAlive(args)
	runtime.KeepAlive(argv)
	if pp == nil || *(*unsafe.Pointer)(pp) == nil {
		return nil, errors.New("chdb: chdb_connect failed")
	}
	return &Session{conn: *(*unsafe.Pointer)(pp)}, nil
}

// Query runs one statement and returns its output in format (TSV, ...).
func (s *Session) Query(sql, format string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	res := chdbQuery(s.conn, sql, format)
	if res == nil {
		return "", errors.New("chdb: no result")
	}
	defer chdbDestroyResult(res)
	if msg := chdbResultError(res); msg != "" {
		return "", fmt.Errorf("chdb: %s", msg)
	}
	n := chdbResultLength(res)
	if n == 0 {
		return "", nil
	}
	return string(unsafe.Slice((*byte)(chdbResultBuffer(res)), n)), nil
}
