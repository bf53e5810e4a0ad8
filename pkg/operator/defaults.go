package operator

import "time"

// Defaults of the command's flags; the benchmark (cmd/bench) runs the
// operator with them too. It chose the workers and the rate limit: the
// "Workers and the rate limit" in docs/reference/flags.md says why.
const (
	// DefaultWorkers is the number of Installations reconciled at once.
	DefaultWorkers = 4
	// DefaultQPS is the steady rate of requests to the API server. A new
	// Installation costs a create per child, a status update and an event,
	// 8 requests for one shard and 14 for four: with much less, the client,
	// not the API server, sets the pace of a mass creation.
	DefaultQPS = 1000
	// DefaultBurst is how many requests may go above DefaultQPS in a burst.
	DefaultBurst = 2000
	// DefaultResyncPeriod is how often every Installation is reconciled
	// although nothing changed; in sync, that costs no request.
	DefaultResyncPeriod = 10 * time.Minute
)
