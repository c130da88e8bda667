//go:build !race

package dataplane_test

// raceBuild: the race detector is off (see cache_race_test.go).
const raceBuild = false
