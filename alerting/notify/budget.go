package notify

import (
	"context"
	"time"

	"github.com/mcpscope/telemetry/alerting"
)

// DefaultEmailPerAccountHour is alerting.email.max_per_account_hour's
// default.
const DefaultEmailPerAccountHour = 200

// EmailSpend is what an account's email budget has spent in the window.
type EmailSpend struct {
	Count int
	// Oldest is the oldest attempt counted: the budget frees a slot when
	// it leaves the window.
	Oldest time.Time
}

// emailWindow is the budget's window.
const emailWindow = time.Hour

// budget keeps the claimed email deliveries of each account within
// EmailPerAccountHour: the budget counts the email deliveries attempted in
// the last hour (stored, so every instance sees the others'); the
// deliveries beyond it are released unsent, still queued, due again when
// the oldest counted attempt leaves the window. Nothing is lost, and a
// tenant cannot turn the installation into a mail cannon. Sends in flight
// on other instances are not counted yet: the bound may be passed by at
// most one claim's worth. It returns the deliveries to send now.
func (o *Outbox) budget(ctx context.Context, claimed []Due) ([]Due, error) {
	if o.EmailPerAccountHour <= 0 {
		return claimed, nil
	}
	var accountIDs []string
	seen := map[string]bool{}
	for _, d := range claimed {
		if d.Channel == alerting.ChannelEmail && !seen[d.AccountID] {
			seen[d.AccountID] = true
			accountIDs = append(accountIDs, d.AccountID)
		}
	}
	if len(accountIDs) == 0 {
		return claimed, nil
	}
	now := time.Now()
	spent, err := o.Store.EmailSpent(ctx, accountIDs, now.Add(-emailWindow))
	if err != nil {
		// Claimed but unsent: the lease expires and another pass tries.
		return nil, err
	}
	keep, deferred := o.split(claimed, spent, now)
	for at, ids := range deferred {
		if err := o.Store.Release(ctx, o.owner, ids, at); err != nil {
			o.Log.Warn("outbox: deferring deliveries failed", "error", err)
			continue
		}
		o.Log.Info("outbox: email budget spent, deliveries wait", "deliveries", len(ids), "until", at)
		if o.Metrics != nil {
			o.Metrics.Deferred(alerting.ChannelEmail, len(ids))
		}
	}
	return keep, nil
}

// split sorts claimed into the deliveries to send now (each email counted
// in flight until recorded) and those to release until a budget slot
// frees, by due time.
func (o *Outbox) split(claimed []Due, spent map[string]EmailSpend, now time.Time) ([]Due, map[time.Time][]string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	keep := claimed[:0:0]
	deferred := map[time.Time][]string{}
	for _, d := range claimed {
		if d.Channel != alerting.ChannelEmail || d.Undecryptable || d.NotMember || d.Unverified || d.To == "" {
			keep = append(keep, d) // ends without a send: costs nothing
			continue
		}
		s := spent[d.AccountID]
		if s.Count+o.inflight[d.AccountID] < o.EmailPerAccountHour {
			o.inflight[d.AccountID]++
			d.budgeted = true
			keep = append(keep, d)
			continue
		}
		// A slot frees when the oldest counted attempt leaves the window
		// (one in flight is attempted about now).
		oldest := now
		if s.Count > 0 {
			oldest = s.Oldest
		}
		at := oldest.Add(emailWindow)
		if soon := now.Add(time.Minute); at.Before(soon) {
			at = soon
		}
		at = at.Truncate(time.Second)
		deferred[at] = append(deferred[at], d.ID)
	}
	return keep, deferred
}
