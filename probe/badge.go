package probe

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"html"
	"strings"

	"github.com/mcpscope/telemetry/alerting"
)

// badgePrefix starts every badge token: 32 random bytes, base64url.
const badgePrefix = "bdg_"

// CreateBadge implements alerting.ProbeBadgeService.
func (s *Service) CreateBadge(ctx context.Context, accountID, probeID string) (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	token := badgePrefix + base64.RawURLEncoding.EncodeToString(b)
	if err := s.Store.SetBadge(ctx, accountID, probeID, token); err != nil {
		return "", err
	}
	return token, nil
}

// DeleteBadge implements alerting.ProbeBadgeService.
func (s *Service) DeleteBadge(ctx context.Context, accountID, probeID string) error {
	return s.Store.SetBadge(ctx, accountID, probeID, "")
}

// BadgeSVG implements alerting.ProbeBadgeService: "mcp | up · 99.95%"
// coloured by status; nothing of the probe but its status and uptime.
func (s *Service) BadgeSVG(ctx context.Context, token string) ([]byte, error) {
	if !strings.HasPrefix(token, badgePrefix) || len(token) > 100 {
		return nil, notFoundBadge()
	}
	_, p, err := s.Store.BadgeProbe(ctx, token)
	if err != nil {
		return nil, err
	}
	ps := []alerting.Probe{p}
	s.withUptime(ctx, ps)
	return RenderBadge(ps[0].Status, ps[0].Uptime.Month), nil
}

// RenderBadge draws the badge of a status and a 30-day uptime (nil: no
// check in 30 days).
func RenderBadge(status string, uptime *float64) []byte {
	colour := map[string]string{alerting.ProbeUp: "#2e9e44", alerting.ProbeDown: "#d73a49"}[status]
	if colour == "" {
		colour = "#8a8f98"
	}
	right := status
	if uptime != nil {
		right += fmt.Sprintf(" · %.2f%%", *uptime*100)
	}
	lw, rw := 36, 12+7*len([]rune(right))
	w := lw + rw
	return []byte(fmt.Sprintf(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="20" role="img" aria-label="mcp: %[2]s">`+
		`<title>mcp: %[2]s</title><rect width="%[3]d" height="20" fill="#555"/><rect x="%[3]d" width="%[4]d" height="20" fill="%[5]s"/>`+
		`<g fill="#fff" font-family="Verdana,DejaVu Sans,sans-serif" font-size="11"><text x="6" y="14">mcp</text>`+
		`<text x="%[6]d" y="14">%[2]s</text></g></svg>`, w, html.EscapeString(right), lw, rw, colour, lw+6))
}
