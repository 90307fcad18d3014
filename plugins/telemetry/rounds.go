package telemetry

// rounds times the rows of a tool that prints no timestamp: a row of a
// GPU already seen in the current round starts the next, at start +
// round × interval (Unix seconds; start 0: unknown, rows keep T 0).
type rounds struct {
	start, interval float64
	round           int
	seen            map[string]bool
}

// next counts a row of gpu into its round and returns the round's time,
// 0 when start is unknown.
func (r *rounds) next(gpu string) float64 {
	if r.seen == nil || r.seen[gpu] {
		if r.seen != nil {
			r.round++
		}
		r.seen = map[string]bool{}
	}
	r.seen[gpu] = true
	if r.start > 0 {
		return r.start + float64(r.round)*r.interval
	}
	return 0
}
