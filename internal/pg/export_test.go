package pg

import (
	"time"

	"github.com/jackc/pgx/v5"
)

// AcquireTimeoutTracer is the tracer Open installs, with a bound of the
// test's choosing.
func AcquireTimeoutTracer(d time.Duration) pgx.QueryTracer { return acquireTimeout{d} }
