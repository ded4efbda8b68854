package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/mcpscope/telemetry/alerting"
	"github.com/mcpscope/telemetry/alerting/notify"
	_ "github.com/mcpscope/telemetry/alerting/notify/registry" // registers every destination
	"github.com/mcpscope/telemetry/alerting/notify/slack"
	"github.com/mcpscope/telemetry/internal/jobs"
	"github.com/mcpscope/telemetry/internal/testkit/chatstub"
	"github.com/mcpscope/telemetry/postgres"
)

// runDelivery measures the outbox (docs/delivery.md): N chat deliveries
// over many destinations drained to a local sink (the Slack stand-in
// behind the TLS-intercepting proxy the tests use) — deliveries/s — then
// the same with one more destination that never answers: the p99 of due
// → sent of the others shows whether it delays them.
func runDelivery(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("delivery", flag.ContinueOnError)
	pgURL := fs.String("pg", "", "PostgreSQL URL (a database the bench may fill)")
	n := fs.Int("n", 10_000, "deliveries")
	per := fs.Int("per", 10, "deliveries per destination (one digest each)")
	timeout := fs.Duration("timeout", 5*time.Second, "per-send timeout")
	outPath := fs.String("out", "", "append the figures to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	db, err := postgres.Open(ctx, postgres.Config{URL: *pgURL, MaxConns: 16}, log)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := db.Migrate(ctx); err != nil {
		return err
	}
	box, err := benchSecretBox()
	if err != nil {
		return err
	}
	sink := hangingSink()
	tmp, err := os.MkdirTemp("", "bench-delivery")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	proxy, caFile, err := chatstub.Start(sink, tmp)
	if err != nil {
		return err
	}
	defer proxy.Close()
	client, err := notify.Outbound{ProxyURL: proxy.URL(), CAFile: caFile}.HTTPClient()
	if err != nil {
		return err
	}
	notifier := &slack.Notifier{Client: client}
	var figs []figure
	for _, withHang := range []bool{false, true} {
		name := "chat deliveries"
		if withHang {
			name = "chat deliveries, one destination hanging"
		}
		accs, hung, err := seedDeliveries(ctx, db, box, *n / *per, *per, withHang)
		if err != nil {
			return err
		}
		if withHang {
			defer db.Pool.Exec(context.Background(), `DELETE FROM accounts WHERE id = ANY($1)`, hung)
		}
		// Due from now: the seeding's own time is not the outbox's.
		if _, err := db.Pool.Exec(ctx, `UPDATE deliveries SET next_attempt_at = now(), queued_at = now() WHERE status = 'queued'`); err != nil {
			return err
		}
		before := len(sink.Requests())
		o := &notify.Outbox{Store: postgres.NewOutboxStore(db, box), Notifiers: map[string]alerting.Notifier{alerting.ChannelSlack: notifier},
			Log: log, Timeout: *timeout, Batch: 500}
		elapsed, err := drainOutbox(ctx, db, o, log, accs, len(accs)**per)
		if err != nil {
			return err
		}
		lat, err := dueToSent(ctx, db, accs)
		if err != nil {
			return err
		}
		rate := float64(len(accs)**per) / elapsed.Seconds()
		p50, p99 := percentile(lat, 50), percentile(lat, 99)
		fmt.Fprintf(out, "%s: %d deliveries to %d destinations in %s: %.0f deliveries/s, due→sent p50 %s p99 %s, %d messages\n",
			name, len(accs)**per, len(accs), elapsed.Round(time.Millisecond), rate, p50.Round(time.Millisecond), p99.Round(time.Millisecond), len(sink.Requests())-before)
		figs = append(figs, figure{"delivery", name, "deliveries_per_s", rate}, figure{"delivery", name, "p99_ms", ms(p99)})
		if _, err := db.Pool.Exec(ctx, `DELETE FROM accounts WHERE id = ANY($1)`, accs); err != nil {
			return err
		}
	}
	return recorder{*outPath}.record(figs...)
}

// benchSecretBox is a secret box under a fixed key.
func benchSecretBox() (*alerting.SecretBox, error) {
	key := make([]byte, alerting.SecretKeyLen)
	for i := range key {
		key[i] = byte(7 * (i + 1))
	}
	return alerting.NewSecretBox(key)
}

// hangingSink is a chat provider that never answers the destination
// whose path holds /BHANG/.
func hangingSink() *chatstub.Provider {
	sink := &chatstub.Provider{}
	sink.SetRespond(func(r chatstub.Request, _ int) chatstub.Answer {
		return chatstub.Answer{Hang: strings.Contains(r.Path, "/BHANG/")}
	})
	return sink
}

// seedDeliveries seeds per chat deliveries to each of dests destinations,
// and with withHang per more to the hanging one; it returns the accounts
// of each.
func seedDeliveries(ctx context.Context, db *postgres.DB, box *alerting.SecretBox, dests, per int, withHang bool) (accs, hung []string, err error) {
	accs, err = postgres.SeedChatDeliveries(ctx, db, box, dests, per, func(i int) string {
		return fmt.Sprintf("https://hooks.slack.com/services/T0001/B%06d/abcdefghijklmnopqrstuvwx", i)
	})
	if err != nil || !withHang {
		return accs, nil, err
	}
	hung, err = postgres.SeedChatDeliveries(ctx, db, box, 1, per, func(int) string {
		return "https://hooks.slack.com/services/T0001/BHANG/abcdefghijklmnopqrstuvwx"
	})
	return accs, hung, err
}

// drainOutbox runs the outbox o until the accounts accs have want sent
// deliveries and returns how long that took.
func drainOutbox(ctx context.Context, db *postgres.DB, o *notify.Outbox, log *slog.Logger, accs []string, want int) (time.Duration, error) {
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		done <- jobs.Run(rctx, jobs.Job{Name: "outbox", Every: 20 * time.Millisecond, Immediately: true, Pass: o.Pass, Done: o.Wait, Log: log})
	}()
	var sent int
	for sent < want {
		if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM deliveries WHERE account_id = ANY($1) AND status = 'sent'`, accs).Scan(&sent); err != nil {
			stop()
			return 0, err
		}
		if ctx.Err() != nil {
			stop()
			return 0, ctx.Err()
		}
		time.Sleep(20 * time.Millisecond)
	}
	elapsed := time.Since(start)
	stop()
	<-done
	return elapsed, nil
}

// dueToSent is the time each delivery of the accounts accs took from
// queued to sent.
func dueToSent(ctx context.Context, db *postgres.DB, accs []string) ([]time.Duration, error) {
	var lat []time.Duration
	rows, err := db.Pool.Query(ctx, `SELECT extract(epoch FROM sent_at - queued_at) FROM deliveries WHERE account_id = ANY($1)`, accs)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var s float64
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		lat = append(lat, time.Duration(s*float64(time.Second)))
	}
	rows.Close()
	return lat, nil
}
