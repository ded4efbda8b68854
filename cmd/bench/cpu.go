package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// clockTicks is the kernel's USER_HZ, the unit of /proc/<pid>/stat's CPU
// times (100 on every Linux architecture Go supports).
const clockTicks = 100

// procCPUSeconds returns the user plus system CPU time a process has used.
func procCPUSeconds(pid int) (float64, error) {
	fields, err := procStatFields(pid)
	if err != nil {
		return 0, err
	}
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(fields))
	}
	utime, err1 := strconv.ParseFloat(fields[11], 64)
	stime, err2 := strconv.ParseFloat(fields[12], 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: utime %q stime %q", pid, fields[11], fields[12])
	}
	return (utime + stime) / clockTicks, nil
}

// procStatFields returns the fields of /proc/<pid>/stat after the command
// name: the command name (field 2) may hold spaces, so fields are counted
// after its closing parenthesis, where field 3 (state) comes first.
func procStatFields(pid int) ([]string, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	s := string(data)
	return strings.Fields(s[strings.LastIndexByte(s, ')')+1:]), nil
}

// readPID reads a process id from a pid file.
func readPID(path string) (int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(data)))
}

// runCPUOf runs a command (another build's bench direct, say) and records
// the CPU seconds ClickHouse used meanwhile per million of its items: on
// a shared machine a steadier comparison of two builds than their rates,
// which wait for CPU as much as they use it.
func runCPUOf(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("bench cpuof", flag.ContinueOnError)
	chPIDFile := fs.String("chpid", "", "ClickHouse's pid file")
	items := fs.Int64("items", 0, "items (rows) the command stores")
	section := fs.String("section", "direct", "section of the figure")
	name := fs.String("name", "direct insert", "name of the figure")
	outPath := fs.String("out", "", "append the figure to this results file")
	settle := fs.String("settle", "", "ClickHouse address: after the command, wait (up to 5 minutes) until no merge runs, so that the CPU of the merges the inserts caused is counted too")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 || *chPIDFile == "" || *items <= 0 {
		return errors.New("usage: bench cpuof -chpid FILE -items N [-section S -name N -out FILE] command [args...]")
	}
	pid, err := readPID(*chPIDFile)
	if err != nil {
		return err
	}
	before, err := procCPUSeconds(pid)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, fs.Arg(0), fs.Args()[1:]...)
	cmd.Stdout, cmd.Stderr = out, os.Stderr
	if err := cmd.Run(); err != nil {
		return err
	}
	if *settle != "" {
		conn, err := openCH(ctx, *settle)
		if err != nil {
			return err
		}
		err = waitForMerges(ctx, conn, "", 5*time.Minute, &progress{out: out, interval: 10 * time.Second, last: time.Now()})
		conn.Close()
		if err != nil {
			return err
		}
	}
	after, err := procCPUSeconds(pid)
	if err != nil {
		return err
	}
	perM := (after - before) / float64(*items) * 1e6
	fmt.Fprintf(out, "  clickhouse CPU: %.1f s for %d rows, %.1f CPU s per million\n", after-before, *items, perM)
	return recorder{*outPath}.record(figure{*section, *name, "clickhouse_cpu_s_per_m_rows", perM})
}
