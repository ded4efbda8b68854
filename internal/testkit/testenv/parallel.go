package testenv

import (
	"flag"
	"os"
	"runtime"
	"strconv"
)

// EnvParallel overrides the parallelism RaiseParallel sets.
const EnvParallel = "TELEMETRY_TEST_PARALLEL"

// RaiseParallel sets how many of a package's parallel tests (t.Parallel)
// run at once to n, unless the command line gave -test.parallel or
// EnvParallel names another number; never below GOMAXPROCS, go test's
// default. Integration tests spend most of their time waiting on the
// database servers (and the ClickHouse 26 proof), not on the CPU of the
// test process, so the default of one test per core leaves the cores idle.
// Call it from TestMain before m.Run.
func RaiseParallel(n int) {
	if !flag.Parsed() {
		flag.Parse()
	}
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if given {
		return
	}
	if v, err := strconv.Atoi(os.Getenv(EnvParallel)); err == nil && v > 0 {
		n = v
	}
	_ = flag.Set("test.parallel", strconv.Itoa(max(n, runtime.GOMAXPROCS(0))))
}
