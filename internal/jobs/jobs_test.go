package jobs

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

type record struct {
	mu   sync.Mutex
	runs []string
}

func (r *record) ObservePass(job string, err error, _ time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := "ok"
	if err != nil {
		out = "failed"
	}
	r.runs = append(r.runs, job+":"+out)
}

func (r *record) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.runs...)
}

// everyMs is a schedule firing every few milliseconds.
type everyMs struct{}

func (everyMs) Next(t time.Time) time.Time { return t.Add(3 * time.Millisecond) }

func TestRunPausesOnFailureAndResumes(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	obs := &record{}
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	outage := errors.New("connection refused")
	err := Run(ctx, Job{Name: "main", Schedule: everyMs{}, Immediately: true, Log: log, Observer: obs,
		Pass: func(context.Context) error {
			n++
			switch n {
			case 2, 3:
				return outage // the database is down: the job keeps its schedule
			case 4:
				panic("a bug in one pass")
			case 6:
				cancel()
			}
			return nil
		},
		Then: []Job{{Name: "after", Pass: func(context.Context) error { return nil }}}})
	if err != nil {
		t.Fatal(err)
	}
	// Pass 1 is the Immediately one (no Then); pass 6 ran as ctx ended.
	want := []string{"main:ok", "main:failed", "after:ok", "main:failed", "after:ok", "main:failed", "after:ok", "main:ok", "after:ok"}
	if got := obs.list(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("passes %v\nwant   %v", got, want)
	}
	text := logs.String()
	if strings.Count(text, "pass failed") != 3 || strings.Count(text, "resumed") != 1 || !strings.Contains(text, "a bug in one pass") {
		t.Fatalf("logs:\n%s", text)
	}
}

func TestEveryDropsTicksAndTimesOut(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var passes int
	start := time.Now()
	var timedOut, stopped bool
	err := Run(ctx, Job{Name: "slow", Every: 5 * time.Millisecond, Timeout: 20 * time.Millisecond, Done: func() { stopped = true },
		Log: slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil)),
		Pass: func(ctx context.Context) error {
			passes++
			if passes == 1 {
				<-ctx.Done() // a stuck dependency: the timeout ends the pass
				timedOut = errors.Is(ctx.Err(), context.DeadlineExceeded)
				return ctx.Err()
			}
			cancel()
			return nil
		}})
	if err != nil || !timedOut || passes != 2 || !stopped {
		t.Fatalf("err %v, timed out %v, passes %d, Done called %v", err, timedOut, passes, stopped)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("took %s", took)
	}
	if err := Run(context.Background(), Job{Name: "none"}); err == nil {
		t.Fatal("a job without interval or schedule ran")
	}
}
