// Package projectors lists the projectors of the read models that run in
// the append transaction (Inline), for the runtime and the tests.
package projectors
