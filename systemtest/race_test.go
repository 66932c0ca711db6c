//go:build race

package systemtest_test

// raceEnabled is true when the race detector is on: tests scale down.
const raceEnabled = true
