package accounts

import "time"

// Invitation is a pending offer to join an account in a role. Its secret
// token is shown once, to the inviter, and is redeemed by signing up with
// it and the invited email. Invitations expire (InvitationTTL).
type Invitation struct {
	ID        string    `json:"id"`
	Email     string    `json:"email"`
	Role      Role      `json:"role"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
}

// InvitationTTL is how long an invitation can be redeemed: long enough for
// a colleague on holiday, short enough that a leaked token goes stale.
const InvitationTTL = 14 * 24 * time.Hour
