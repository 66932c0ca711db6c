package sftp

import (
	"sync"
)

// Defaults of the Config limits (docs/sftp.md, "Limits"). Each bounds
// what one party can hold of what every company shares (descriptors,
// goroutines, the handshake slots): a client before it logs in, one
// company, one connection.
const (
	defaultMaxConnections               = 512
	defaultMaxUnauthenticated           = 64
	defaultMaxUnauthenticatedPerAddress = 8
	defaultMaxConnectionsPerCompany     = 16
	defaultMaxSessionsPerConnection     = 4
	defaultMaxOpenFilesPerCompany       = 64
)

// counts holds how many of each kind of slot are taken, by key
// ("conns", "unauth/<address>", "files/<company id>", ...).
type counts struct {
	mu sync.Mutex
	n  map[string]int
}

// take takes one of key's limit slots, or reports that all are taken.
func (c *counts) take(key string, limit int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n[key] >= limit {
		return false
	}
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[key]++
	return true
}

// give gives back a slot of key taken with take.
func (c *counts) give(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n[key]--; c.n[key] <= 0 {
		delete(c.n, key)
	}
}

// Keys of counts.
const (
	keyConns  = "conns"
	keyUnauth = "unauth"
)

func keyUnauthFrom(addr string) string   { return "unauth/" + addr }
func keyCompany(companyID string) string { return "company/" + companyID }
func keyFiles(companyID string) string   { return "files/" + companyID }
