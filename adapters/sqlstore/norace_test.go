//go:build !race

package sqlstore_test

// raceDetector says whether the tests run under the race detector (-race).
const raceDetector = false
