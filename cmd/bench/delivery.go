package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/mcpscope/telemetry/alerting"
	"github.com/mcpscope/telemetry/alerting/notify"
	_ "github.com/mcpscope/telemetry/alerting/notify/registry" // registers every destination
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
	channels := fs.String("channels", strings.Join(benchChannels, ","), "team channels to measure, each in turn")
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
	var figs []figure
	for _, channel := range strings.Split(*channels, ",") {
		in, ok := alerting.LookupIntegration(channel)
		if !ok || in.New == nil || benchConnect[channel] == nil {
			return fmt.Errorf("delivery: no bench destination for channel %q", channel)
		}
		notifier, err := in.New(alerting.NotifierDeps{HTTP: func() (*http.Client, error) { return client, nil }, Proxied: true})
		if err != nil {
			return err
		}
		for _, withHang := range []bool{false, true} {
			fig, err := deliveryRun(ctx, db, box, sink, log, channel, notifier, *n, *per, *timeout, withHang, out)
			if err != nil {
				return fmt.Errorf("%s: %w", channel, err)
			}
			figs = append(figs, fig...)
		}
	}
	return recorder{*outPath}.record(figs...)
}

// benchChannels are the team channels the delivery part measures.
var benchChannels = []string{"slack", "pagerduty", "teams", "google_chat", "webhook"}

// benchConnect gives the connect body of destination i of each channel
// (hang: the one that never answers; its URL or key holds BHANG).
var benchConnect = map[string]func(i int, hang bool) map[string]string{
	"slack": func(i int, hang bool) map[string]string {
		return map[string]string{"url": fmt.Sprintf("https://hooks.slack.com/services/T0001/B%s/abcdefghijklmnopqrstuvwx", hangOr(hang, i))}
	},
	"pagerduty": func(i int, hang bool) map[string]string {
		return map[string]string{"routing_key": fmt.Sprintf("R%sabcdefghijklmnopqrstuvwxy", hangOr(hang, i))}
	},
	"teams": func(i int, hang bool) map[string]string {
		return map[string]string{"url": fmt.Sprintf("https://prod-01.westus.logic.azure.com:443/workflows/%s0123456789abcdef0123456789/triggers/manual/paths/invoke?api-version=2016-06-01&sp=%%2Ftriggers%%2Fmanual%%2Frun&sv=1.0&sig=SiGnAtUrE0123456789abcdefghijklmnopqrstu", hangOr(hang, i))}
	},
	"google_chat": func(i int, hang bool) map[string]string {
		return map[string]string{"url": fmt.Sprintf("https://chat.googleapis.com/v1/spaces/A%s/messages?key=AIzaKeY0123456789&token=ToKeN0123456789abcdef%%3D", hangOr(hang, i))}
	},
	"webhook": func(i int, hang bool) map[string]string {
		return map[string]string{"url": fmt.Sprintf("https://hooks.example.org/alerts/%s", hangOr(hang, i))}
	},
}

// hangOr is the six characters naming destination i, or BHANG0 for the
// hanging one.
func hangOr(hang bool, i int) string {
	if hang {
		return "BHANG0"
	}
	return fmt.Sprintf("%06d", i)
}

// deliveryRun drains n deliveries of channel over n/per destinations
// (with withHang, beside one more that never answers) and reports
// deliveries/s and due → sent.
func deliveryRun(ctx context.Context, db *postgres.DB, box *alerting.SecretBox, sink *chatstub.Provider, log *slog.Logger, channel string,
	notifier alerting.Notifier, n, per int, timeout time.Duration, withHang bool, out io.Writer) ([]figure, error) {
	name := channel + " deliveries"
	if withHang {
		name += ", one destination hanging"
	}
	accs, err := postgres.SeedDeliveries(ctx, db, box, channel, n/per, per, func(i int) map[string]string { return benchConnect[channel](i, false) })
	if err != nil {
		return nil, err
	}
	defer db.Pool.Exec(context.Background(), `DELETE FROM accounts WHERE id = ANY($1)`, accs)
	if withHang {
		hung, err := postgres.SeedDeliveries(ctx, db, box, channel, 1, per, func(int) map[string]string { return benchConnect[channel](0, true) })
		if err != nil {
			return nil, err
		}
		defer db.Pool.Exec(context.Background(), `DELETE FROM accounts WHERE id = ANY($1)`, hung)
	}
	// Due from now: the seeding's own time is not the outbox's.
	if _, err := db.Pool.Exec(ctx, `UPDATE deliveries SET next_attempt_at = now(), queued_at = now() WHERE status = 'queued'`); err != nil {
		return nil, err
	}
	before := len(sink.Requests())
	o := &notify.Outbox{Store: postgres.NewOutboxStore(db, box), Notifiers: map[string]alerting.Notifier{channel: notifier},
		Log: log, Timeout: timeout, Batch: 500}
	elapsed, err := drainOutbox(ctx, db, o, log, accs, len(accs)*per)
	if err != nil {
		return nil, err
	}
	lat, err := dueToSent(ctx, db, accs)
	if err != nil {
		return nil, err
	}
	rate := float64(len(accs)*per) / elapsed.Seconds()
	p50, p99 := percentile(lat, 50), percentile(lat, 99)
	fmt.Fprintf(out, "%s: %d deliveries to %d destinations in %s: %.0f deliveries/s, due→sent p50 %s p99 %s, %d requests\n",
		name, len(accs)*per, len(accs), elapsed.Round(time.Millisecond), rate, p50.Round(time.Millisecond), p99.Round(time.Millisecond), len(sink.Requests())-before)
	return []figure{{"delivery", name, "deliveries_per_s", rate}, {"delivery", name, "p99_ms", ms(p99)}}, nil
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
// whose URL or body holds BHANG.
func hangingSink() *chatstub.Provider {
	sink := &chatstub.Provider{}
	sink.SetRespond(func(r chatstub.Request, _ int) chatstub.Answer {
		return chatstub.Answer{Hang: strings.Contains(r.Path, "BHANG") || strings.Contains(string(r.Body), "BHANG")}
	})
	return sink
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
