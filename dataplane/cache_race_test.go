//go:build race

package dataplane_test

// raceBuild: the race detector is on. The cache-model beds then take no
// random moments: an eviction reads lines other pollers are writing, which
// the detector reports (correctly, though the model's result stays exact).
const raceBuild = true
