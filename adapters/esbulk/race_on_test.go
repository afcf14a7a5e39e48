//go:build race

package esbulk

// raceEnabled: the race detector multiplies the cost of every allocation and access, so tests
// of megabytes that measure the heap skip under it.
const raceEnabled = true
