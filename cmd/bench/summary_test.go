package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestGoBenchWeekAgoRatios reads go test -bench lines with extra metrics,
// several runs of each benchmark, and prints the week_ago over steady
// ratios of the runs' medians, in time and in CPU, beside the baseline's:
// the verdicts follow each figure.
func TestGoBenchWeekAgoRatios(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// Three runs (-count 3): each figure is the median of its runs.
	this := write("this.txt", `goos: linux
BenchmarkEvaluatePass10kRules/steady-2         	       3	 100000000 ns/op	        70.00 ch-cpu-ms/op	        50.00 go-cpu-ms/op
BenchmarkEvaluatePass10kRules/steady_half_week_ago-2         	       3	 125000000 ns/op	        90.00 ch-cpu-ms/op	        54.00 go-cpu-ms/op
BenchmarkEvaluatePass10kRules/steady-2         	       3	 300000000 ns/op	        99.00 ch-cpu-ms/op	        80.00 go-cpu-ms/op
BenchmarkEvaluatePass10kRules/steady_half_week_ago-2         	       3	 110000000 ns/op	        80.00 ch-cpu-ms/op	        40.00 go-cpu-ms/op
BenchmarkEvaluatePass10kRules/steady-2         	       3	 90000000 ns/op	        60.00 ch-cpu-ms/op	        45.00 go-cpu-ms/op
BenchmarkEvaluatePass10kRules/steady_half_week_ago-2         	       3	 140000000 ns/op	        95.00 ch-cpu-ms/op	        60.00 go-cpu-ms/op
PASS
`)
	base := write("base.txt", `BenchmarkEvaluatePass10kRules/steady-2 3 80000000 ns/op 70.00 ch-cpu-ms/op 50.00 go-cpu-ms/op
BenchmarkEvaluatePass10kRules/steady_half_week_ago-2 3 112000000 ns/op 100.00 ch-cpu-ms/op 68.00 go-cpu-ms/op
`)
	var out strings.Builder
	if err := (summary{out: &out}).goBench(this, base); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`rule pass, half week_ago / steady\s+1\.25x \(base 1\.40x\)\s+<= 1\.3x\s+ok\n`,
		`rule pass CPU, half week_ago / steady\s+1\.20x \(base 1\.40x\)\s+<= 1\.3x\s+ok\n`,
	} {
		if !regexp.MustCompile(want).MatchString(out.String()) {
			t.Errorf("summary lacks %s:\n%s", want, out.String())
		}
	}
	if n := strings.Count(out.String(), " ok\n"); n != 4 { // both passes and both ratios
		t.Errorf("%d goals met, want 4:\n%s", n, out.String())
	}
}

// TestGoBenchSeasonalAndSLOs: the combined pass of 10,000 seasonal rules
// and 10,000 SLOs is judged against its 1 s goal beside the 10,000-rule
// pass, with the CPU per pass.
func TestGoBenchSeasonalAndSLOs(t *testing.T) {
	p := filepath.Join(t.TempDir(), "this.txt")
	text := `BenchmarkEvaluatePass10kRules/steady-2 3 100000000 ns/op 70.00 ch-cpu-ms/op 50.00 go-cpu-ms/op
BenchmarkEvaluatePassSeasonalAndSLOs/slos-2 3 400000000 ns/op 150.00 ch-cpu-ms/op 90.00 go-cpu-ms/op
BenchmarkEvaluatePassSeasonalAndSLOs/rules_and_slos-2 3 1200000000 ns/op 610.00 ch-cpu-ms/op 330.00 go-cpu-ms/op
`
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := (summary{out: &out}).goBench(p, ""); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`BenchmarkEvaluatePass10kRules/steady\s+100ms\s+< 0\.3 s quiet \(<= 10 s\)\s+ok\n`,
		`BenchmarkEvaluatePassSeasonalAndSLOs/rules_and_slos\s+1\.2s\s+< 1 s \(docs/slos\.md\)\s+MISSED\n`,
		`CPU per pass: Go / ClickHouse\s+330 ms / 610 ms\n`,
	} {
		if !regexp.MustCompile(want).MatchString(out.String()) {
			t.Errorf("summary lacks %s:\n%s", want, out.String())
		}
	}
}
