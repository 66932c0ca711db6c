// Package systemtest holds the whole-system tests: each starts the real
// HTTP stack (api and console on one engine) on a migrated PostgreSQL
// database of its own, with the commands, read models, projectors and
// workers that serve wires, and speaks to it as a client does. The tests
// of one package's own logic stay beside it.
package systemtest
