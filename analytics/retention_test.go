package analytics

import (
	"testing"
	"time"
)

func TestRetentionCutoffs(t *testing.T) {
	today := time.Date(2026, 11, 25, 15, 0, 0, 0, time.UTC)
	day := func(ago int) time.Time { return UTCDay(today).AddDate(0, 0, -ago) }
	for _, c := range []struct {
		name         string
		installation int
		accounts     []AccountRetention
		drop         time.Time
		per          map[string]time.Time
	}{
		{"no accounts: the installation's", 60, nil, day(59), map[string]time.Time{}},
		{"forever", 0, []AccountRetention{{"a", 0, []string{"m"}}}, time.Time{}, map[string]time.Time{}},
		{"one keeps less", 60, []AccountRetention{{"a", 30, []string{"m1"}}, {"b", 60, []string{"m2"}}}, day(59), map[string]time.Time{"a": day(29)}},
		{"all keep less: drop at the longest", 60, []AccountRetention{{"a", 30, []string{"m1"}}, {"b", 10, []string{"m2"}}}, day(29), map[string]time.Time{"b": day(9)}},
		{"one keeps forever: no drop", 0, []AccountRetention{{"a", 30, []string{"m1"}}, {"b", 0, []string{"m2"}}}, time.Time{}, map[string]time.Time{"a": day(29)}},
		{"an account without MCPs needs no delete", 60, []AccountRetention{{"a", 7, nil}, {"b", 60, []string{"m"}}}, day(59), map[string]time.Time{}},
	} {
		drop, per := RetentionCutoffs(c.installation, c.accounts, today)
		if !drop.Equal(c.drop) || len(per) != len(c.per) {
			t.Errorf("%s: drop %v per %v, want %v %v", c.name, drop, per, c.drop, c.per)
			continue
		}
		for k, v := range c.per {
			if !per[k].Equal(v) {
				t.Errorf("%s: %s keeps from %v, want %v", c.name, k, per[k], v)
			}
		}
	}
}

func TestRangeLowerAndKeptFrom(t *testing.T) {
	r := NewRange(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
	if !r.Lower().Equal(r.From) {
		t.Error("without KeptFrom, Lower is From")
	}
	r.KeptFrom = time.Date(2026, 2, 10, 0, 0, 0, 0, time.UTC)
	if !r.Lower().Equal(r.KeptFrom) || r.NumDays() != 60 || r.Before(7).KeptFrom != r.KeptFrom {
		t.Errorf("with KeptFrom: %v", r)
	}
	if !KeptFrom(0, time.Now()).IsZero() || !KeptFrom(1, time.Date(2026, 5, 5, 23, 0, 0, 0, time.UTC)).Equal(time.Date(2026, 5, 5, 0, 0, 0, 0, time.UTC)) {
		t.Error("KeptFrom")
	}
}

func TestCountNoun(t *testing.T) {
	for n, want := range map[int]string{0: "0 raw items", 1: "1 raw item", 2: "2 raw items"} {
		if got := Count(n, "raw item"); got != want {
			t.Errorf("Count(%d) = %q, want %q", n, got, want)
		}
	}
}
