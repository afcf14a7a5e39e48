//go:build race

package storetest

// raceDetector is true when the tests run under the race detector (go test -race).
const raceDetector = true
