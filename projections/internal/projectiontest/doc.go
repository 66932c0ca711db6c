// Package projectiontest is the environment the tests of the projectors
// and of the runtime share: a database with a store, the test commits and
// the waits for a projector to catch up.
package projectiontest
