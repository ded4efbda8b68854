package accounts

import "time"

// User is a person. One person may belong to several accounts; their email
// is unique regardless of case.
type User struct {
	ID        string    `json:"id"`
	Email     string    `json:"email"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
}

// Profile is the caller's own record as /v1/account/profile shows it.
type Profile struct {
	UserID string `json:"user_id"`
	Email  string `json:"email"`
	Name   string `json:"name"`
	// EmailVerified: the person proved the address (VerificationService).
	EmailVerified bool `json:"email_verified"`
}

// ProfileUpdate changes the caller's own profile; nil fields stay as they
// are. The email stays unique across people.
type ProfileUpdate struct {
	Name  *string `json:"name"`
	Email *string `json:"email"`
}

// Validate checks the fields present.
func (u ProfileUpdate) Validate() error {
	if u.Name != nil {
		if err := checkText("body.name", *u.Name, 1, MaxNameLen); err != nil {
			return err
		}
	}
	if u.Email != nil {
		return checkEmail("body.email", *u.Email)
	}
	return nil
}
