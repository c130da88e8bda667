//go:build race

package bpf

// raceOn says the race detector is on (race_off_test.go).
const raceOn = true
