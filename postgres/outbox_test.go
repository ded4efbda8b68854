package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/alerting"
	"github.com/mcpscope/telemetry/alerting/notify"
	"github.com/mcpscope/telemetry/alerting/notify/slack"
	"github.com/mcpscope/telemetry/internal/jobs"
	"github.com/mcpscope/telemetry/internal/testkit/chatstub"
	"github.com/mcpscope/telemetry/internal/testkit/testdb"
	"github.com/mcpscope/telemetry/postgres"
)

// chatEnv is the Slack stand-in behind the TLS-intercepting proxy and a
// Slack notifier that reaches it as it would reach hooks.slack.com.
func chatEnv(t *testing.T) (*chatstub.Provider, alerting.Notifier) {
	t.Helper()
	p := &chatstub.Provider{}
	proxy, caFile, err := chatstub.Start(p, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	client, err := notify.Outbound{ProxyURL: proxy.URL(), CAFile: caFile}.HTTPClient()
	if err != nil {
		t.Fatal(err)
	}
	return p, &slack.Notifier{Client: client}
}

func hook(i int) string {
	return fmt.Sprintf("https://hooks.slack.com/services/T0001/B%04d/abcdefghijklmnopqrstuvwx", i)
}

// TestTwoOutboxesSendOnce: two instances (two pools, two outboxes) drain
// one outbox at once; every delivery is sent exactly once, digests share a
// message id, and no destination gets two messages within a second from
// one instance.
func TestTwoOutboxesSendOnce(t *testing.T) {
	t.Parallel()
	url, db1 := testdb.Postgres(t)
	db2 := testdb.OpenPostgres(t, url)
	ctx := context.Background()
	const accounts, per = 12, 15
	accIDs, err := postgres.SeedChatDeliveries(ctx, db1, testBox(t), accounts, per, hook)
	if err != nil {
		t.Fatal(err)
	}
	stub, notifier := chatEnv(t)
	run, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, db := range []*postgres.DB{db1, db2} {
		o := &notify.Outbox{Store: postgres.NewOutboxStore(db, testBox(t)), Notifiers: map[string]alerting.Notifier{alerting.ChannelSlack: notifier},
			Timeout: 5 * time.Second, RetryBase: 50 * time.Millisecond, ChatInterval: 200 * time.Millisecond, MaxDigest: 4}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = jobs.Run(run, jobs.Job{Name: "outbox", Every: 10 * time.Millisecond, Immediately: true, Pass: o.Pass, Done: o.Wait})
		}()
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		var sent int
		if err := db1.Pool.QueryRow(ctx, `SELECT count(*) FROM deliveries WHERE account_id = ANY($1) AND status = 'sent'`, accIDs).Scan(&sent); err != nil {
			t.Fatal(err)
		}
		if sent == accounts*per {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d sent", sent, accounts*per)
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	wg.Wait()

	seen := map[string]int{}
	for _, r := range stub.Requests() {
		var p slack.Payload
		if err := json.Unmarshal(r.Body, &p); err != nil {
			t.Fatal(err)
		}
		for _, b := range p.Blocks {
			if b.Type == "header" {
				seen[b.Text.Text]++
			}
		}
	}
	if len(seen) != accounts*per {
		t.Errorf("%d distinct deliveries reached Slack, want %d", len(seen), accounts*per)
	}
	for title, n := range seen {
		if n != 1 {
			t.Errorf("%q sent %d times", title, n)
		}
	}
	var attempts, msgs, maxPerMsg int
	if err := db1.Pool.QueryRow(ctx, `SELECT sum(attempts), count(DISTINCT message_id), max(c) FROM (
			SELECT attempts, message_id, count(*) OVER (PARTITION BY message_id) AS c FROM deliveries WHERE account_id = ANY($1)) d`,
		accIDs).Scan(&attempts, &msgs, &maxPerMsg); err != nil {
		t.Fatal(err)
	}
	if attempts != accounts*per || msgs != len(stub.Requests()) || maxPerMsg > 4 {
		t.Errorf("attempts %d (want %d), %d message ids for %d requests, largest digest %d (max 4)", attempts, accounts*per, msgs, len(stub.Requests()), maxPerMsg)
	}
}
