package httpapi

import (
	"testing"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/accounts"
)

// TestChannelTestLimiter: tests are counted per person and per account;
// a refusal by the account's budget does not spend the person's.
func TestChannelTestLimiter(t *testing.T) {
	t.Parallel()
	var l channelTestLimiter
	l.init(ChannelTestLimits{PerPerson: 2, PerAccount: 3})
	a := &accounts.Principal{AccountID: "acc_a", UserID: "usr_1"}
	b := &accounts.Principal{AccountID: "acc_a", UserID: "usr_2"}
	c := &accounts.Principal{AccountID: "acc_b", UserID: "usr_3"}
	steps := []struct {
		p    *accounts.Principal
		want bool
	}{{a, true}, {a, true}, {a, false}, {b, true}, {b, false}, {c, true}}
	for i, s := range steps {
		err := l.allow(s.p)
		if (err == nil) != s.want {
			t.Fatalf("step %d: %v", i, err)
		}
		if err != nil {
			var e *telemetry.Error
			if telemetry.ErrorCode(err) != telemetry.ERATELIMITED || !asError(err, &e) || e.RetryAfter < 1 {
				t.Fatalf("step %d: %v", i, err)
			}
		}
	}
}

func asError(err error, e **telemetry.Error) bool {
	x, ok := err.(*telemetry.Error)
	*e = x
	return ok
}
