package twirpapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/twitchtv/twirp"

	"example.com/obsvc/domain"
)

// internalMsg is all a client learns of an internal error; its cause goes to the log.
const internalMsg = "the server failed to handle the request"

// toTwirp is the one mapping from domain errors to Twirp errors. Invalid input becomes
// invalid_argument with meta "argument" naming the proto field. Only a *domain.Error's client-safe
// message reaches the client: anything else, and any internal error, is logged with its cause and
// answered as a bare internal error.
func toTwirp(ctx context.Context, log *slog.Logger, err error) twirp.Error {
	var de *domain.Error
	if !errors.As(err, &de) || de.Kind == domain.KindInternal {
		log.ErrorContext(ctx, "twirp call failed", "err", err)
		return twirp.NewError(twirp.Internal, internalMsg)
	}
	switch de.Kind {
	case domain.KindInvalid:
		if len(de.Fields) > 0 && de.Fields[0].Param != "" {
			f := de.Fields[0]
			return twirp.InvalidArgumentError(f.Param, f.Detail)
		}
		return twirp.NewError(twirp.InvalidArgument, de.Msg)
	case domain.KindNotFound, domain.KindUnknownProject:
		return twirp.NewError(twirp.NotFound, de.Msg)
	case domain.KindUnavailable:
		return twirp.NewError(twirp.Unavailable, de.Msg)
	case domain.KindConflict, domain.KindKeyReused:
		return twirp.NewError(twirp.Aborted, de.Msg)
	case domain.KindUnauthenticated:
		return twirp.NewError(twirp.Unauthenticated, de.Msg)
	case domain.KindForbidden:
		return twirp.NewError(twirp.PermissionDenied, de.Msg)
	case domain.KindRateLimited:
		return twirp.NewError(twirp.ResourceExhausted, de.Msg)
	case domain.KindTooLarge:
		// Not resource_exhausted: Twirp clients treat that (HTTP 429) as "retry later", and the
		// same body will never fit.
		return twirp.NewError(twirp.Malformed, de.Msg)
	}
	log.ErrorContext(ctx, "twirp call failed with an unmapped kind", "err", err)
	return twirp.NewError(twirp.Internal, internalMsg)
}

// WriteError answers err as a Twirp error through toTwirp: for requests refused before the
// service runs (by the edge middleware, or over the body cap).
func WriteError(w http.ResponseWriter, r *http.Request, err error, log *slog.Logger) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	te := toTwirp(r.Context(), log, err)
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
