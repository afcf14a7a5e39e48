// Package twirpapi is the Twirp adapter: it serves the generated Haberdasher interface by calling
// the domain and maps domain errors to Twirp errors in one function.
package twirpapi

import (
	"context"
	"log/slog"

	"github.com/twitchtv/twirp"

	"example.com/obsvc/api/haberdasher"
	"example.com/obsvc/domain"
)

type server struct {
	svc *domain.Service
}

// MakeHat implements haberdasher.Haberdasher.
func (s *server) MakeHat(ctx context.Context, size *haberdasher.Size) (*haberdasher.Hat, error) {
	hat, err := s.svc.MakeHat(ctx, size.GetInches())
	if err != nil {
		return nil, toTwirp(err)
	}
	return &haberdasher.Hat{Inches: hat.Inches, Color: hat.Color, Name: hat.Name}, nil
}

// NewHandler returns the Twirp Haberdasher service; mount it at PathPrefix. Internal errors are
// logged with their cause; extra hooks (metrics) run after the adapter's own.
func NewHandler(svc *domain.Service, log *slog.Logger, extra ...*twirp.ServerHooks) haberdasher.TwirpServer {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	hooks := &twirp.ServerHooks{
		Error: func(ctx context.Context, err twirp.Error) context.Context {
			if err.Code() == twirp.Internal {
				log.ErrorContext(ctx, "twirp call failed", "err", err)
			}
			return ctx
		},
	}
	return haberdasher.NewHaberdasherServer(&server{svc: svc}, twirp.WithServerHooks(twirp.ChainHooks(append([]*twirp.ServerHooks{hooks}, extra...)...)))
}

// PathPrefix is where the Haberdasher service is mounted.
const PathPrefix = haberdasher.HaberdasherPathPrefix
