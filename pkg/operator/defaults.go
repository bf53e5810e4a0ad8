package operator

import "time"

// Defaults of the command's flags; the benchmark (cmd/bench) runs the
// operator with them too.
const (
	// DefaultWorkers is the number of Installations reconciled at once.
	DefaultWorkers = 4
	// DefaultQPS is the steady rate of requests to the API server.
	DefaultQPS = 50
	// DefaultBurst is how many requests may go above DefaultQPS in a burst.
	DefaultBurst = 100
	// DefaultResyncPeriod is how often every Installation is reconciled
	// although nothing changed; in sync, that costs no request.
	DefaultResyncPeriod = 10 * time.Minute
)
