//go:build !race

package esbulk

const raceEnabled = false
