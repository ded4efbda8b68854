package chatstub

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Request is a request the stand-in received.
type Request struct {
	Host   string
	Path   string
	Query  string
	Header http.Header
	Body   []byte
	At     time.Time
}

// Answer is how the stand-in answers one request.
type Answer struct {
	Status int
	Header http.Header
	Body   string
	// Hang: never answer (until the client gives up).
	Hang bool
}

// Provider answers as the providers do on success (success), unless Respond (set before use, or with SetRespond) says
// otherwise. n counts the requests to the same path so far, this one
// included.
type Provider struct {
	mu      sync.Mutex
	reqs    []Request
	respond func(r Request, n int) Answer
}

// SetRespond replaces the scripted answers (nil: the providers' success).
func (p *Provider) SetRespond(f func(r Request, n int) Answer) {
	p.mu.Lock()
	p.respond = f
	p.mu.Unlock()
}

// Requests returns the requests received so far.
func (p *Provider) Requests() []Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Request(nil), p.reqs...)
}

// To returns the requests received for a path prefix.
func (p *Provider) To(prefix string) []Request {
	var out []Request
	for _, r := range p.Requests() {
		if strings.HasPrefix(r.Path, prefix) {
			out = append(out, r)
		}
	}
	return out
}

// ServeHTTP implements http.Handler.
func (p *Provider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	req := Request{Host: r.Host, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: body, At: time.Now()}
	p.mu.Lock()
	p.reqs = append(p.reqs, req)
	n := 0
	for _, x := range p.reqs {
		if x.Path == req.Path {
			n++
		}
	}
	respond := p.respond
	p.mu.Unlock()
	a := Answer{}
	if respond != nil {
		a = respond(req, n)
	}
	if a.Hang {
		<-r.Context().Done()
		return
	}
	if a.Status == 0 {
		a = success(r.Host)
	}
	for k, v := range a.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(a.Status)
	_, _ = io.WriteString(w, a.Body)
}

// success is a provider's answer to an accepted message: Slack 200 "ok",
// PagerDuty 202 with its JSON, a Teams Workflows trigger 202, Google Chat
// 200 with the message, anything else (Discord) 204.
func success(host string) Answer {
	json := http.Header{"Content-Type": {"application/json"}}
	switch {
	case strings.HasPrefix(host, "hooks.slack.com"):
		return Answer{Status: http.StatusOK, Body: "ok"}
	case strings.HasPrefix(host, "events.pagerduty.com"):
		return Answer{Status: http.StatusAccepted, Header: json, Body: `{"status":"success","message":"Event processed","dedup_key":"x"}`}
	case strings.Contains(host, ".logic.azure.com") || strings.Contains(host, ".environment.api.powerplatform.com"):
		return Answer{Status: http.StatusAccepted}
	case strings.HasPrefix(host, "chat.googleapis.com"):
		return Answer{Status: http.StatusOK, Header: json, Body: `{"name":"spaces/AAAA/messages/BBBB"}`}
	}
	return Answer{Status: http.StatusNoContent}
}
