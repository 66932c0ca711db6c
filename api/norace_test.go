//go:build !race

package api_test

// raceEnabled is true when the race detector is on: tests scale down.
const raceEnabled = false
