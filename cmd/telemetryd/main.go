// Command telemetryd is the telemetry and alerting service.
//
//	telemetryd [serve]            run the API, flusher, evaluator and nightly cron
//	telemetryd migrate            apply database migrations and exit
//	telemetryd nightly --date D   compute the nightly metrics for day D (or --from/--to)
//	telemetryd retention [--dry-run] delete telemetry beyond retention now (or print what would go)
//	telemetryd wal verify [--dir D] check the write-ahead log for damage (read only)
//	telemetryd schema [--cluster NAME] [--replicated]  print the ClickHouse DDL (no database needed)
//
// Every command takes --config FILE (default configs/telemetryd.yaml when it
// exists); every setting can be overridden as TELEMETRY_<SECTION>_<KEY>.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/mcpscope/telemetry/clickhouse"
	"github.com/mcpscope/telemetry/wal"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "telemetryd:", err)
		}
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cmd := "serve"
	if len(args) > 0 && args[0] != "" && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	}
	if cmd == "wal" {
		if len(args) == 0 || args[0] != "verify" {
			return fmt.Errorf("usage: telemetryd wal verify [--dir DIR]")
		}
		cmd, args = "wal verify", args[1:]
	}
	fs := flag.NewFlagSet("telemetryd "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "configuration file (default configs/telemetryd.yaml when present)")
	f := defineCommandFlags(fs, cmd)
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := LoadConfig(*configPath)
	if err != nil {
		return err
	}
	if cmd == "schema" {
		return printSchema(cfg.ClickHouse, *f.cluster, *f.replicated, stdout)
	}
	if cmd == "wal verify" {
		dir := cfg.Ingest.WALDir
		if *f.walDir != "" {
			dir = *f.walDir
		}
		return verifyWAL(dir, stdout)
	}
	log := newLogger(cfg.Log, stderr)
	m := NewMain(cfg, log)
	defer m.Close()

	switch cmd {
	case "serve":
		if err := m.Open(ctx); err != nil {
			return err
		}
		return m.Run(ctx)
	case "migrate":
		if err := m.Connect(ctx); err != nil {
			return err
		}
		if err := m.Migrate(ctx); err != nil {
			return err
		}
		fmt.Fprintln(stdout, "migrations applied")
		return nil
	case "nightly":
		if err := m.Connect(ctx); err != nil {
			return err
		}
		return m.RunNightlyCommand(ctx, *f.date, *f.from, *f.to, stdout)
	case "retention":
		if err := m.Connect(ctx); err != nil {
			return err
		}
		ran, err := m.RunRetention(ctx, *f.dryRun, stdout)
		if err == nil && !ran {
			err = fmt.Errorf("another instance is running the retention pass; try again in a moment")
		}
		return err
	default:
		return fmt.Errorf("unknown command %q (want serve, migrate, nightly, retention, schema or wal verify)", cmd)
	}
}

// commandFlags are the flags of one command (nil: not the command's).
type commandFlags struct {
	date, from, to *string // nightly
	dryRun         *bool   // retention
	walDir         *string // wal verify
	cluster        *string // schema
	replicated     *bool   // schema
}

// defineCommandFlags defines in fs the flags of the command cmd.
func defineCommandFlags(fs *flag.FlagSet, cmd string) commandFlags {
	var f commandFlags
	if cmd == "nightly" {
		f.date = fs.String("date", "", "the UTC day to compute, YYYY-MM-DD (default: yesterday)")
		f.from = fs.String("from", "", "first UTC day of a range to backfill, YYYY-MM-DD")
		f.to = fs.String("to", "", "last UTC day of a range to backfill, YYYY-MM-DD")
	}
	if cmd == "retention" {
		f.dryRun = fs.Bool("dry-run", false, "print what would be deleted and change nothing")
	}
	if cmd == "wal verify" {
		f.walDir = fs.String("dir", "", "the log directory (default: ingest.wal_dir)")
	}
	if cmd == "schema" {
		f.cluster = fs.String("cluster", "", "render for this cluster of remote_servers (default: clickhouse.cluster)")
		f.replicated = fs.Bool("replicated", false, "render replicated tables and ON CLUSTER DDL (default: clickhouse.replicated)")
	}
	return f
}

// printSchema prints the ClickHouse DDL of the configuration, or of the
// cluster the flags name, for operators to review or apply by hand; it
// connects to nothing.
func printSchema(c ClickHouseConfig, cluster string, replicated bool, w io.Writer) error {
	if cluster != "" {
		c.Cluster = cluster
	}
	if replicated {
		c.Replicated = true
	}
	if err := c.storeConfig().ValidateCluster(); err != nil {
		return fmt.Errorf("schema (--cluster NAME, --replicated): %w", err)
	}
	ddl, err := clickhouse.Schema(c.storeConfig())
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, ddl)
	return err
}

// errDamaged makes `telemetryd wal verify` exit 1 when it found damage.
var errDamaged = errors.New("the write-ahead log is damaged: the next start repairs it (see above)")

// verifyWAL reports the write-ahead log's state and damage without changing
// it; the service may be running.
func verifyWAL(dir string, w io.Writer) error {
	rep, err := wal.Verify(dir)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "write-ahead log %s: %d segments, records %d..%d (%d), acknowledged up to %d, %d lost in earlier repairs\n",
		dir, rep.Segments, rep.FirstSeq, rep.LastSeq, rep.Records, rep.Acked, rep.Lost)
	if len(rep.Damages) == 0 {
		fmt.Fprintln(w, "no damage found")
		return nil
	}
	for _, d := range rep.Damages {
		fmt.Fprintln(w, d.String())
	}
	return errDamaged
}

func newLogger(c LogConfig, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(c.Level))
	opts := &slog.HandlerOptions{Level: level}
	if c.Format == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}
