package notify

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/mcpscope/telemetry/alerting"
)

// Due is a delivery the outbox claimed: leased to this instance until its
// lease expires, with its destination resolved by the store.
type Due struct {
	ID        string
	AccountID string
	Channel   string
	// To is the recipient's email address or the opened webhook URL; ""
	// when there is none (a disconnected channel, a person gone).
	To string
	// Broken: the team channel's webhook was revoked and not reconnected.
	Broken bool
	// Undecryptable: the sealed webhook URL could not be opened (another
	// key, a restored or damaged row); this delivery fails alone.
	Undecryptable bool
	// NotMember: the recipient no longer belongs to the account.
	NotMember bool
	// Unverified: the recipient's email address is not verified.
	Unverified bool
	// budgeted: counted in flight against its account's email budget
	// until recorded.
	budgeted bool
	// Attempts counts the attempts of this round (since it was queued or
	// retried by an admin), not counting the one about to be made.
	Attempts int
	QueuedAt time.Time
	DueAt    time.Time
	Message  alerting.Message
}

// Outcome is the result of one attempt (or of a decision not to attempt)
// for one claimed delivery.
type Outcome struct {
	ID        string
	AccountID string
	Channel   string
	// Status is StatusSent, StatusFailed, or StatusQueued (alerting) with NextAttempt
	// set (a retry).
	Status      string
	MessageID   string
	Error       string
	NextAttempt time.Time
	// Attempted is false when nothing was sent (a broken or disconnected
	// destination, a released claim): attempts is not counted then.
	Attempted bool
	At        time.Time
}

// OutboxStore is the durable outbox (the deliveries table).
type OutboxStore interface {
	// Claim leases up to limit due queued deliveries of the given channels
	// to owner until now+lease; a delivery leased by another live owner is
	// skipped (two instances never hold the same delivery).
	Claim(ctx context.Context, owner string, channels []string, limit int, lease time.Duration) ([]Due, error)
	// Record stores outcomes of deliveries leased by owner and ends their
	// lease; it also keeps each team channel's health (last sent, last
	// failure). An outcome for a delivery no longer leased by owner is
	// ignored.
	Record(ctx context.Context, owner string, outcomes []Outcome) error
	// Release ends owner's lease of ids without an attempt, due again at
	// at (a destination that is busy or rate limited here).
	Release(ctx context.Context, owner string, ids []string, at time.Time) error
	// MarkBroken marks the account's team channel broken (its webhook was
	// revoked) and tells the account's admins in their inbox, once per
	// breakage.
	MarkBroken(ctx context.Context, accountID, channel string, d Due) error
	// QueueStats counts the queued deliveries of channels and the age of
	// the oldest one that is due.
	QueueStats(ctx context.Context, channels []string) (depth int, oldestDue time.Duration, err error)
	// EmailSpent counts, per account of accountIDs, the email deliveries
	// attempted since since and the oldest of those attempts.
	EmailSpent(ctx context.Context, accountIDs []string, since time.Time) (map[string]EmailSpend, error)
}

// OutboxMetrics receives what the outbox did, by channel.
type OutboxMetrics interface {
	Delivered(channel, status string, n int) // status: sent, failed, retried
	Queue(depth int, oldestDue time.Duration)
	// Deferred counts deliveries put back unsent: their account's budget
	// is spent (EmailPerAccountHour).
	Deferred(channel string, n int)
}

// Outbox drains the durable outbox: it claims due deliveries with a lease,
// groups them by destination, sends each group through the channel's
// Notifier with a per-send timeout, and records every attempt. Every
// instance runs one; the lease keeps two from sending the same delivery at
// the same time.
//
// Delivery is at least once: a send the provider accepted is recorded just
// after; a crash (or a lost connection to PostgreSQL) between the two
// leaves the delivery queued, and it is sent again when its lease expires.
// That window is one round trip to PostgreSQL per send. See
// docs/delivery.md.
type Outbox struct {
	Store     OutboxStore
	Notifiers map[string]alerting.Notifier // only the channels configured to send
	Log       *slog.Logger
	Metrics   OutboxMetrics // may be nil
	// BaseURL is the service's public base address, for the links in
	// messages.
	BaseURL string

	// Timeout bounds one send (default 10 s); the lease is 2·Timeout+10s.
	Timeout time.Duration
	// RetryBase is the first backoff (DefaultRetryBase when 0).
	RetryBase time.Duration
	// ChatInterval is the least time between two messages to one chat
	// destination (default 1 s); deliveries due meanwhile are sent as one
	// digest.
	ChatInterval time.Duration
	// Concurrency bounds the sends in flight (default 32); a destination
	// sends one envelope at a time, so a hanging one holds one slot.
	Concurrency int
	// Batch is how many deliveries one claim takes (default 200).
	Batch int
	// MaxDigest is the most messages one chat envelope carries (default 10,
	// Discord's embed limit).
	MaxDigest int
	// EmailPerAccountHour bounds the emails one account sends in an hour
	// (0: no bound); deliveries beyond it wait, queued (budget.go).
	EmailPerAccountHour int

	owner    string
	once     sync.Once
	mu       sync.Mutex
	busy     map[string]bool      // destinations with a send in flight
	lastChat map[string]time.Time // last send per chat destination
	inflight map[string]int       // emails being sent, per account (budget)
	sem      chan struct{}
	wg       sync.WaitGroup
	statsAt  time.Time // the queue metrics' last read (Pass)
}

func (o *Outbox) init() {
	o.once.Do(func() {
		var b [8]byte
		_, _ = rand.Read(b[:])
		o.owner = "obx_" + hex.EncodeToString(b[:])
		if o.Timeout <= 0 {
			o.Timeout = 10 * time.Second
		}
		if o.ChatInterval <= 0 {
			o.ChatInterval = time.Second
		}
		if o.Concurrency <= 0 {
			o.Concurrency = 32
		}
		if o.Batch <= 0 {
			o.Batch = 200
		}
		if o.MaxDigest <= 0 {
			o.MaxDigest = 10
		}
		if o.Log == nil {
			o.Log = slog.New(slog.DiscardHandler)
		}
		o.busy = map[string]bool{}
		o.lastChat = map[string]time.Time{}
		o.inflight = map[string]int{}
		o.sem = make(chan struct{}, o.Concurrency)
	})
}

// Channels lists the channels this outbox sends.
func (o *Outbox) Channels() []string {
	var out []string
	for _, id := range alerting.ChannelIDs() {
		if _, ok := o.Notifiers[id]; ok {
			out = append(out, id)
		}
	}
	return out
}

// outboxStatsEvery spaces the queue metrics' reads.
const outboxStatsEvery = 5 * time.Second

// Pass claims one batch of due deliveries and starts their sends (Drain),
// refreshing the queue metrics every few seconds: a background job runs
// it every alerting.delivery.poll_interval, then calls Wait on stopping.
// An outbox without notifiers has nothing to send.
func (o *Outbox) Pass(ctx context.Context) error {
	o.init()
	if len(o.Notifiers) == 0 {
		return nil
	}
	if time.Since(o.statsAt) >= outboxStatsEvery {
		o.statsAt = time.Now()
		o.stats(ctx)
	}
	if _, err := o.Drain(ctx); err != nil {
		return fmt.Errorf("outbox: claiming deliveries: %w", err)
	}
	return nil
}

func (o *Outbox) stats(ctx context.Context) {
	if o.Metrics == nil {
		return
	}
	depth, oldest, err := o.Store.QueueStats(ctx, o.Channels())
	if err == nil {
		o.Metrics.Queue(depth, oldest)
	}
}

// Drain claims one batch of due deliveries and starts their sends; it
// does not wait for them (Wait does). It returns how many it claimed.
func (o *Outbox) Drain(ctx context.Context) (int, error) {
	o.init()
	claimedAt := time.Now()
	claimed, err := o.Store.Claim(ctx, o.owner, o.Channels(), o.Batch, o.lease())
	if err != nil || len(claimed) == 0 {
		return 0, err
	}
	n := len(claimed)
	if claimed, err = o.budget(ctx, claimed); err != nil {
		return n, err
	}
	groups, order := map[string][]Due{}, []string{}
	for _, d := range claimed {
		k := destinationKey(d)
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], d)
	}
	now := time.Now()
	var release []string
	releaseAt := now.Add(o.ChatInterval)
	for _, k := range order {
		g := groups[k]
		o.mu.Lock()
		wait := o.ChatInterval - now.Sub(o.lastChat[k])
		blocked := o.busy[k] || (alerting.IsTeamChannel(g[0].Channel) && wait > 0)
		if !blocked {
			o.busy[k] = true
		}
		o.mu.Unlock()
		if blocked {
			for _, d := range g {
				release = append(release, d.ID)
			}
			continue
		}
		if alerting.IsTeamChannel(g[0].Channel) && len(g) > o.MaxDigest {
			for _, d := range g[o.MaxDigest:] {
				release = append(release, d.ID)
			}
			g = g[:o.MaxDigest]
		}
		o.wg.Add(1)
		go o.sendGroup(ctx, k, g, claimedAt)
	}
	if len(release) > 0 {
		if err := o.Store.Release(ctx, o.owner, release, releaseAt); err != nil {
			o.Log.Warn("outbox: releasing deliveries failed", "error", err)
		}
	}
	return n, nil
}

// Wait waits for the sends Drain started.
func (o *Outbox) Wait() { o.init(); o.wg.Wait() }

// destinationKey names where a delivery goes: a team channel of one
// account (digested), or the delivery itself (email, one per person).
func destinationKey(d Due) string {
	if alerting.IsTeamChannel(d.Channel) {
		return d.AccountID + "/" + d.Channel
	}
	return "dlv/" + d.ID
}

// lease is how long a claim holds: a send that starts within the first
// half of it ends (Timeout) before it expires.
func (o *Outbox) lease() time.Duration { return 2*o.Timeout + 10*time.Second }

func (o *Outbox) sendGroup(ctx context.Context, key string, g []Due, claimedAt time.Time) {
	defer o.wg.Done()
	defer func() {
		o.mu.Lock()
		delete(o.busy, key)
		for _, d := range g {
			if d.budgeted {
				o.inflight[d.AccountID]--
			}
		}
		o.mu.Unlock()
	}()
	select {
	case o.sem <- struct{}{}:
	case <-ctx.Done():
		return // the lease expires and another pass takes them
	}
	defer func() { <-o.sem }()
	if time.Since(claimedAt) > o.lease()-o.Timeout-5*time.Second {
		// Waited too long for a slot: the lease might expire mid-send and
		// another instance send it too. Give it back instead.
		o.release(ctx, g)
		return
	}
	first := g[0]
	// Records outlive a shutdown that arrives mid-send: a send that
	// happened must be recorded.
	rctx := context.WithoutCancel(ctx)
	switch {
	case first.Undecryptable:
		o.record(rctx, final(g, alerting.StatusFailed, alerting.ErrCodeUndecryptable))
		return
	case first.NotMember:
		o.record(rctx, final(g, alerting.StatusFailed, alerting.ErrCodeNotMember))
		return
	case first.Unverified:
		o.record(rctx, final(g, alerting.StatusFailed, alerting.ErrCodeUnverified))
		return
	case first.Broken:
		o.record(rctx, final(g, alerting.StatusFailed, alerting.ErrCodeRevoked))
		return
	case first.To == "" && alerting.IsTeamChannel(first.Channel):
		o.record(rctx, final(g, alerting.StatusFailed, alerting.ErrCodeNotConnected))
		return
	case first.To == "":
		o.record(rctx, final(g, alerting.StatusFailed, alerting.ErrCodeNoAddress))
		return
	}
	env := alerting.Envelope{Channel: first.Channel, To: first.To, MessageID: alerting.NewMessageID()}
	for _, d := range g {
		m := d.Message
		m.RuleURL, m.SettingsURL = alerting.Links(o.BaseURL, m)
		env.Messages = append(env.Messages, m)
	}
	// A shutdown lets the send finish (bounded by Timeout) rather than
	// cut it off after the provider may have accepted it.
	sctx, cancel := context.WithTimeout(rctx, o.Timeout)
	retry, err := o.Notifiers[first.Channel].Notify(sctx, env)
	if err != nil && sctx.Err() == context.DeadlineExceeded {
		retry, err = true, &alerting.SendError{Code: alerting.ErrCodeTimeout}
	}
	cancel()
	now := time.Now()
	if alerting.IsTeamChannel(first.Channel) {
		o.mu.Lock()
		o.lastChat[key] = now
		o.mu.Unlock()
	}
	if err == nil {
		out := make([]Outcome, len(g))
		for i, d := range g {
			out[i] = Outcome{ID: d.ID, AccountID: d.AccountID, Channel: d.Channel, Status: alerting.StatusSent, MessageID: env.MessageID, Attempted: true, At: now}
		}
		o.record(rctx, out)
		return
	}
	o.record(rctx, o.failed(rctx, g, err, retry, now))
}

// release gives the claimed deliveries of g back, unsent.
func (o *Outbox) release(ctx context.Context, g []Due) {
	ids := make([]string, len(g))
	for i, d := range g {
		ids[i] = d.ID
	}
	if err := o.Store.Release(context.WithoutCancel(ctx), o.owner, ids, time.Now()); err != nil {
		o.Log.Warn("outbox: releasing deliveries failed", "error", err)
	}
}

// failed is the outcome of the deliveries of g whose send failed at now
// with err: queued again when retry allows another attempt, else failed.
// A revoked webhook is marked broken and not retried.
func (o *Outbox) failed(rctx context.Context, g []Due, err error, retry bool, now time.Time) []Outcome {
	first := g[0]
	code := alerting.ErrorText(err)
	var se *alerting.SendError
	var retryAfter time.Duration
	if asSendError(err, &se) {
		retryAfter = se.RetryAfter
		if se.Revoked {
			if merr := o.Store.MarkBroken(rctx, first.AccountID, first.Channel, first); merr != nil {
				o.Log.Warn("outbox: marking a webhook broken failed", "account", first.AccountID, "channel", first.Channel, "error", merr)
			}
			code, retry = alerting.ErrCodeRevoked, false
		}
	}
	o.Log.Info("outbox: send failed", "channel", first.Channel, "account", first.AccountID, "deliveries", len(g), "error", code, "retry", retry)
	out := make([]Outcome, len(g))
	for i, d := range g {
		oc := Outcome{ID: d.ID, AccountID: d.AccountID, Channel: d.Channel, Error: code, Attempted: true, At: now, Status: alerting.StatusFailed}
		if next, ok := NextAttempt(now, d.QueuedAt, d.Attempts+1, retry, retryAfter, o.RetryBase); ok {
			oc.Status, oc.NextAttempt = alerting.StatusQueued, next
		}
		out[i] = oc
	}
	return out
}

func asSendError(err error, se **alerting.SendError) bool {
	e, ok := err.(*alerting.SendError)
	if ok {
		*se = e
	}
	return ok
}

func final(g []Due, status, code string) []Outcome {
	now := time.Now()
	out := make([]Outcome, len(g))
	for i, d := range g {
		out[i] = Outcome{ID: d.ID, AccountID: d.AccountID, Channel: d.Channel, Status: status, Error: code, At: now}
	}
	return out
}

func (o *Outbox) record(ctx context.Context, out []Outcome) {
	if err := o.Store.Record(ctx, o.owner, out); err != nil {
		o.Log.Warn("outbox: recording deliveries failed; they will be sent again when their lease expires", "error", err)
		return
	}
	if o.Metrics == nil {
		return
	}
	for _, oc := range out {
		switch {
		case oc.Status == alerting.StatusSent:
			o.Metrics.Delivered(oc.Channel, alerting.StatusSent, 1)
		case oc.Status == alerting.StatusFailed:
			o.Metrics.Delivered(oc.Channel, alerting.StatusFailed, 1)
		default:
			o.Metrics.Delivered(oc.Channel, "retried", 1)
		}
	}
}
