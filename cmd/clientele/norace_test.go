//go:build !race

package main

// raceEnabled is true when the race detector is on: long tests scale down.
const raceEnabled = false
