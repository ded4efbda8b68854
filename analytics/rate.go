package analytics

// ErrorRate returns errors / calls, or 0 when there were no calls.
func ErrorRate(errors, calls int64) float64 {
	return Share(errors, calls)
}

// Share returns part / whole, or 0 when whole is 0: a share of nothing is
// reported as none rather than as NaN, which JSON cannot carry.
func Share(part, whole int64) float64 {
	if whole == 0 {
		return 0
	}
	return float64(part) / float64(whole)
}
