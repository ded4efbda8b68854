package accounts

import (
	"net/url"
	"strings"
)

// Company is the account's billing identity. Every field is optional: nil
// is null on the wire.
type Company struct {
	LegalName    *string `json:"legal_name"`
	Website      *string `json:"website"`
	BillingEmail *string `json:"billing_email"`
	Address      *string `json:"address"`
	VATID        *string `json:"vat_id"`
}

// Limits of the company fields, in characters (billing_email: bytes).
const (
	MaxLegalNameLen = 200
	MaxWebsiteLen   = 2048
	MaxAddressLen   = 1000
	MaxVATIDLen     = 64
)

// Change is one field of a merge update: Set says the request named the
// field; Value is the new value, nil for an explicit null (which clears it).
// A merge must tell "absent" from "null", which a plain pointer cannot.
type Change[T any] struct {
	Set   bool
	Value *T
}

// To returns a Change that sets the field to v (nil clears it).
func To[T any](v *T) Change[T] { return Change[T]{Set: true, Value: v} }

// CompanyUpdate changes the company record field by field. A replacement
// (PUT) sets all five; a merge (PATCH) only those the request named.
type CompanyUpdate struct {
	LegalName    Change[string]
	Website      Change[string]
	BillingEmail Change[string]
	Address      Change[string]
	VATID        Change[string]
}

// ReplaceCompany is the update that makes the record exactly c.
func ReplaceCompany(c Company) CompanyUpdate {
	return CompanyUpdate{LegalName: To(c.LegalName), Website: To(c.Website), BillingEmail: To(c.BillingEmail),
		Address: To(c.Address), VATID: To(c.VATID)}
}

// Apply returns c with the update's changes made.
func (u CompanyUpdate) Apply(c Company) Company {
	set := func(dst **string, ch Change[string]) {
		if ch.Set {
			*dst = ch.Value
		}
	}
	set(&c.LegalName, u.LegalName)
	set(&c.Website, u.Website)
	set(&c.BillingEmail, u.BillingEmail)
	set(&c.Address, u.Address)
	set(&c.VATID, u.VATID)
	return c
}

// Validate checks the values being set; clearing is always allowed. An
// empty string is refused: null is how a field is cleared.
func (u CompanyUpdate) Validate() error {
	text := func(field string, ch Change[string], maxLen int) error {
		if !ch.Set || ch.Value == nil {
			return nil
		}
		return checkText(field, *ch.Value, 1, maxLen)
	}
	if err := text("body.legal_name", u.LegalName, MaxLegalNameLen); err != nil {
		return err
	}
	if err := text("body.website", u.Website, MaxWebsiteLen); err != nil {
		return err
	}
	if u.Website.Set && u.Website.Value != nil && !isWebURL(*u.Website.Value) {
		return fieldInvalid("body.website", "must be an http or https URL such as https://example.com")
	}
	if u.BillingEmail.Set && u.BillingEmail.Value != nil {
		if err := checkEmail("body.billing_email", *u.BillingEmail.Value); err != nil {
			return err
		}
	}
	if err := text("body.address", u.Address, MaxAddressLen); err != nil {
		return err
	}
	return text("body.vat_id", u.VATID, MaxVATIDLen)
}

func isWebURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" &&
		!strings.ContainsAny(s, " \t\r\n")
}
