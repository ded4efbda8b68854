// Package accounts is the domain of people, accounts, memberships, roles,
// MCPs and the two credentials: session tokens and ingest keys. It holds
// types, validation and service interfaces; the postgres package implements
// them and httpapi exposes them.
package accounts
