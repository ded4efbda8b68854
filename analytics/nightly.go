package analytics

// NightlyWindowDays is the span of the nightly figures: the 28 days ending
// on the day they are computed for.
const NightlyWindowDays = 28

// Nightly holds the engagement figures of one MCP computed by the nightly
// pass over the NightlyWindowDays days ending on its as-of day. They are
// all null before the first pass.
type Nightly struct {
	// ActiveUsers28d counts distinct users over the 28 days (a user is a
	// user_id, or the session id for items without one).
	ActiveUsers28d *int64 `json:"active_users_28d"`
	// Stickiness is the mean number of daily users over the 28 days divided
	// by ActiveUsers28d: 1 when every user came every day, 1/28 when each
	// came once; 0 when there were no users.
	Stickiness *float64 `json:"stickiness"`
	// Retention7d is the share of the users active in days -13..-7 (the as-of
	// day being 0) who were active again in days -6..0. It is null when
	// nobody was active in days -13..-7: a rate over no one is undefined,
	// and 0 would read as "everyone left".
	Retention7d *float64 `json:"retention_7d"`
}
