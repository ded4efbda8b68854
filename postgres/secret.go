package postgres

// ID prefixes: every id says what it names, which makes logs and support
// requests readable and lets a malformed id be refused without a query.
const (
	prefixUser       = "usr_"
	prefixAccount    = "acc_"
	prefixMCP        = "mcp_"
	prefixKey        = "key_"
	prefixInvitation = "inv_"
	prefixSession    = "ses_"
	prefixDeletion   = "del_"
	prefixToken      = "tok_"
	// prefixInviteToken starts the secret of an invitation. It shares inv_
	// with invitation ids, but is twice as long and only ever looked up by
	// its hash, so the two cannot be confused.
	prefixInviteToken = "inv_"
)
