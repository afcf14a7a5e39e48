package httpapi

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"example.com/obsvc/api/rest"
	"example.com/obsvc/domain"
)

// LogContext implements rest.StrictServerInterface. As with a listing, nothing is read here:
// the returned response streams the entry and its neighbours from the store while writing the
// body, so a context of 2 x 1,000 entries of 64 KiB is never held in memory.
func (s *server) LogContext(ctx context.Context, req rest.LogContextRequestObject) (rest.LogContextResponseObject, error) {
	p := req.Params
	q := domain.ContextQuery{ProjectID: p.ProjectId, ID: p.Id, Query: query(p.Query)}
	if p.Before != nil {
		n := int(*p.Before)
		q.Before = &n
	}
	if p.After != nil {
		n := int(*p.After)
		q.After = &n
	}
	return contextPage{ctx: ctx, svc: s.svc, q: q, stall: s.stall, log: s.log, buffers: s.buffers}, nil
}

// contextPage is the 200 response of LogContext, streamed:
// {"before":[...],"entry":{...},"after":[...]}, each entry encoded as a listing encodes it.
type contextPage struct {
	ctx     context.Context
	svc     *domain.Service
	q       domain.ContextQuery
	stall   time.Duration
	log     *slog.Logger
	buffers *sync.Pool
}

func (p contextPage) VisitLogContextResponse(w http.ResponseWriter) error {
	started := false
	err := p.svc.LogContext(p.ctx, p.q, func(c domain.LogContext) error {
		w.Header().Set("Content-Type", "application/json")
		started = true
		w.WriteHeader(http.StatusOK)
		bw, release := streamWriter(p.buffers, w, p.stall)
		defer release()
		enc := json.NewEncoder(bw)
		enc.SetEscapeHTML(false)
		var entry rest.LogEntry
		side := func(open string, entries func(func(domain.LogEntry, error) bool)) error {
			_, _ = bw.WriteString(open)
			if err := encodeEntries(bw, enc, &entry, entries); err != nil {
				return err
			}
			return bw.WriteByte(']')
		}
		if err := side(`{"before":[`, c.Before); err != nil {
			return err
		}
		_, _ = bw.WriteString(`,"entry":`)
		entry = toEntry(c.Entry)
		if err := enc.Encode(&entry); err != nil {
			return err
		}
		if err := side(`,"after":[`, c.After); err != nil {
			return err
		}
		_, _ = bw.WriteString("}\n")
		return bw.Flush()
	})
	return endStream(p.ctx, p.log, "context", err, started)
}
