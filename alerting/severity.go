package alerting

// Rule severities, from the most to the least urgent. A rule's severity is
// shown in every message of its deliveries and is the severity of its
// PagerDuty events, whose enum it follows.
const (
	SeverityCritical = "critical"
	SeverityError    = "error"
	SeverityWarning  = "warning"
	SeverityInfo     = "info"
)

// Severities lists the severities, the most urgent first.
var Severities = []string{SeverityCritical, SeverityError, SeverityWarning, SeverityInfo}

// ValidSeverity reports whether s is a severity.
func ValidSeverity(s string) bool { return contains(Severities, s) }

// Details are the numbers of a delivery, kept beside its text for the
// structured destinations (PagerDuty's custom_details, the signed
// webhook's event): the rule's definition when the delivery was made and
// the value measured (nil when none, e.g. a resolve without data).
type Details struct {
	Metric        string   `json:"metric"`
	Comparator    string   `json:"comparator"`
	Threshold     float64  `json:"threshold"`
	Value         *float64 `json:"value"`
	Tool          *string  `json:"tool,omitempty"`
	WindowMinutes int      `json:"window_minutes"`
	Baseline      *string  `json:"baseline,omitempty"`
}

// DetailsOf returns the details of a delivery of rule with value.
func DetailsOf(r Rule, value *float64) Details {
	return Details{Metric: r.Metric, Comparator: r.Comparator, Threshold: r.Threshold, Value: value,
		Tool: r.Tool, WindowMinutes: r.WindowMinutes, Baseline: r.Baseline}
}

// withValue sets the measured value on planned deliveries.
func withValue(plan []PlannedDelivery, v *float64) []PlannedDelivery {
	for i := range plan {
		plan[i].Value = v
	}
	return plan
}
