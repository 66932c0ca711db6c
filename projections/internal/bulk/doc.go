// Package bulk writes read-model rows in bulk for the projectors: one
// statement per table per call, whatever the number of events, the rows
// sent as one JSON array; and it decodes an event's data, naming the event
// when it fails.
package bulk
