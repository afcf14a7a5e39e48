package edge

import "context"

type admissionKey struct{}

// withAdmission returns ctx carrying release, which gives back the share of a limit on requests
// in flight that the request holds (with those its context carries already). release must be
// safe to call more than once: the limit calls it again when the request ends.
func withAdmission(ctx context.Context, release func()) context.Context {
	prior, _ := ctx.Value(admissionKey{}).([]func())
	return context.WithValue(ctx, admissionKey{}, append(prior[:len(prior):len(prior)], release))
}

// EndAdmission gives back every share of a limit on requests in flight that ctx carries: a
// long-lived request (a live tail) counts against those limits while it works (its start), and
// not while it waits.
func EndAdmission(ctx context.Context) {
	fns, _ := ctx.Value(admissionKey{}).([]func())
	for _, fn := range fns {
		fn()
	}
}
