package twirpapi

import (
	"errors"
	"net/http"

	"github.com/twitchtv/twirp"

	"example.com/obsvc/domain"
)

// toTwirp is the one mapping from domain errors to Twirp errors. Invalid input becomes
// invalid_argument with meta "argument" naming the proto field; causes of internal errors stay
// out of the message.
func toTwirp(err error) twirp.Error {
	var de *domain.Error
	if !errors.As(err, &de) {
		return twirp.InternalErrorWith(err)
	}
	switch de.Kind {
	case domain.KindInvalid:
		if len(de.Fields) > 0 {
			f := de.Fields[0]
			return twirp.InvalidArgumentError(f.Param, f.Detail)
		}
		return twirp.NewError(twirp.InvalidArgument, de.Msg)
	case domain.KindNotFound:
		return twirp.NewError(twirp.NotFound, de.Msg)
	case domain.KindUnavailable:
		return twirp.NewError(twirp.Unavailable, de.Msg)
	case domain.KindConflict:
		return twirp.NewError(twirp.Aborted, de.Msg)
	case domain.KindUnauthenticated:
		return twirp.NewError(twirp.Unauthenticated, de.Msg)
	case domain.KindForbidden:
		return twirp.NewError(twirp.PermissionDenied, de.Msg)
	case domain.KindRateLimited:
		return twirp.NewError(twirp.ResourceExhausted, de.Msg)
	case domain.KindTooLarge:
		return twirp.NewError(twirp.ResourceExhausted, de.Msg)
	default:
		return twirp.NewError(twirp.Internal, "the server failed to handle the request")
	}
}

// WriteError answers err as a Twirp error through toTwirp: for the middleware that refuses a
// Twirp request before the service runs.
func WriteError(w http.ResponseWriter, err error) {
	te := toTwirp(err)
	switch te.Code() {
	case twirp.Unauthenticated:
		w.Header().Set("WWW-Authenticate", "Bearer")
	case twirp.Unavailable, twirp.ResourceExhausted:
		if w.Header().Get("Retry-After") == "" {
			w.Header().Set("Retry-After", "1")
		}
	}
	_ = twirp.WriteError(w, te) // the status is out; a failed write has no one to tell
}
