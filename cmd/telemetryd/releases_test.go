package main

import "testing"

// TestReleaseVerdictsEndToEnd runs sdk/typescript/test/releases.e2e.js
// against the real binary: servers of the official TypeScript SDK wrapped
// by ours, released twice with a version bump (a tool's error rate rising:
// worse and fail; equal traffic: same and pass; too little traffic:
// insufficient and pending), the verdict read with a personal access token.
func TestReleaseVerdictsEndToEnd(t *testing.T) {
	t.Parallel()
	runNodeSuite(t, "sdk/typescript", "test/releases.e2e.js")
}
