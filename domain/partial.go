package domain

import (
	"context"
	"errors"
	"fmt"
	"strconv"
)

// PartialBatch is a write in which each record stands alone, as in an OpenTelemetry export: the
// records that break a rule are left out and reported, the rest are stored together.
type PartialBatch struct {
	// ProjectID is the project the request names, "" when it names none. A project key implies
	// its own project; an admin key must name one.
	ProjectID string
	// Records are the entries as sent; their ProjectID is ignored (the batch's project is theirs).
	Records []LogInput
	// IdempotencyKey is the client's own key, "" when it sent none.
	IdempotencyKey string
	// Fingerprint identifies the request as sent (a digest of its body, say: 1 to 128 printable
	// ASCII characters). A request equal to one stored within the idempotency window, under the
	// same key and for the same project, is answered as that one was and stored once, even
	// without an IdempotencyKey: exporters resend identical requests after a timeout.
	Fingerprint string
	// EveryProblem asks for a problem per rejected record in PartialResult.Problems, not only the
	// first Limits.MaxFieldErrors: a protocol that answers each record on its own (the
	// Elasticsearch bulk API) needs one for each.
	EveryProblem bool
}

// PartialResult is the outcome of CreateLogsPartial.
type PartialResult struct {
	// Stored is how many records are stored (by this request or, when Replayed, its first).
	Stored int
	// Rejected is how many records were left out; Problems names the first of them
	// (Limits.MaxFieldErrors at most), each with the record's index as the first element of its
	// Path and the offending field as the second.
	Rejected int
	Problems []FieldError
	// Replayed is true when this answers a retry of a request stored before.
	Replayed bool
	// IDs holds, by record index, the id each stored record got ("" for a rejected one); nil
	// when Replayed (the first request's ids are not kept) or when nothing was stored.
	IDs []string
}

// fingerprintKeyPrefix marks the idempotency keys made of a request's fingerprint, so that
// they never meet a key a client chose.
const fingerprintKeyPrefix = "request-digest:"

// CreateLogsPartial validates each record of b on its own, stores the valid ones in one
// transaction and reports the others. Whole-request failures are errors: no project named by an
// admin key KindInvalid (on Names.Project), another project than a project key's
// KindForbidden, an unknown project KindNotFound, more records than Limits.MaxBatchEntries
// KindTooLarge, an idempotency key reused for another request KindKeyReused, the same one
// still in flight KindConflict.
func (s *Service) CreateLogsPartial(ctx context.Context, b PartialBatch) (PartialResult, error) {
	who, ok := PrincipalFrom(ctx)
	if !ok {
		return PartialResult{}, Errorf(KindUnauthenticated, "authentication required")
	}
	project := b.ProjectID
	switch {
	case who.Admin && project == "":
		return PartialResult{}, ParamError(s.names.Project, "is required with an admin key or an open service: it names the project the records belong to")
	case !who.Admin && project != "" && project != who.ProjectID:
		return PartialResult{}, Errorf(KindForbidden, "this key does not cover project %s", Brief(project))
	case !who.Admin:
		project = who.ProjectID
	}
	if b.IdempotencyKey != "" && !validIdempotencyKey(b.IdempotencyKey) {
		return PartialResult{}, ParamError(s.names.IdempotencyKey, "must be 1 to 255 printable ASCII characters")
	}
	if len(b.Fingerprint) > 128 || (b.Fingerprint != "" && !validIdempotencyKey(b.Fingerprint)) {
		return PartialResult{}, fmt.Errorf("create logs: a request fingerprint of %d bytes is not printable ASCII of at most 128", len(b.Fingerprint))
	}
	if len(b.Records) > s.limits.MaxBatchEntries {
		return PartialResult{}, Errorf(KindTooLarge, "a request holds at most %d log records, this one has %d", s.limits.MaxBatchEntries, len(b.Records))
	}
	p, err := s.project(ctx, project)
	if err != nil {
		return PartialResult{}, err
	}

	now := s.now().UnixMilli()
	oldest := int64(-1 << 63)
	if p.RetentionDays != nil {
		oldest = cutoff(now, *p.RetentionDays)
	}
	var res PartialResult
	entries := make([]LogEntry, 0, len(b.Records))
	index := make([]int, 0, len(b.Records)) // the record index of each entry
	for i, in := range b.Records {
		in.ProjectID = project
		var problem *FieldError
		e := s.buildEntry(in, now, func(field, detail string) {
			if problem == nil {
				problem = &FieldError{Path: []string{strconv.Itoa(i), field}, Detail: detail}
			}
		})
		if problem == nil && e.Time < oldest {
			problem = &FieldError{Path: []string{strconv.Itoa(i), "time"}, Detail: "is older than the project's retention of " + strconv.Itoa(*p.RetentionDays) + " days"}
		}
		if problem != nil {
			res.Rejected++
			if b.EveryProblem || len(res.Problems) < s.limits.MaxFieldErrors {
				res.Problems = append(res.Problems, *problem)
			}
			continue
		}
		entries = append(entries, e)
		index = append(index, i)
	}
	if len(entries) == 0 {
		return res, nil
	}
	if !validID(entries[0].ID) {
		return PartialResult{}, errNoIDs
	}

	var rec *IdempotencyRecord
	if key := s.partialKey(b); key != "" {
		rec = &IdempotencyRecord{Scope: idempotencyScope(who, entries[:1]), Key: key, Fingerprint: b.Fingerprint, Created: len(entries), CreatedAt: storeTime(s.now())}
		claim := rec.Scope + "\x00" + rec.Key
		if !s.inflight.claim(claim) {
			return PartialResult{}, Errorf(KindConflict, "the same request is still being handled; retry later")
		}
		defer s.inflight.release(claim)
	}
	done := s.writes.begin()
	w, err := s.store.CreateLogs(ctx, entries, s.logWrite(entries, rec, now))
	done()
	var missing *MissingProjectsError
	if errors.As(err, &missing) {
		return PartialResult{}, projectNotFound(project) // deleted since it was read
	}
	if KindOf(err) == KindExpired {
		// The project's retention changed since it was read: the request is answered as a whole,
		// and its retry sees the new retention.
		return PartialResult{}, Errorf(KindUnavailable, "the project's retention changed while this request was handled; retry")
	}
	if err != nil {
		return PartialResult{}, fmt.Errorf("create logs: %w", err)
	}
	if prior := w.Prior; prior != nil {
		if prior.Fingerprint != rec.Fingerprint {
			return PartialResult{}, Errorf(KindKeyReused, "this %s was used for a different request", s.names.IdempotencyKey)
		}
		res.Stored, res.Replayed = prior.Created, true
		return res, nil
	}
	if s.tailer != nil {
		s.tailer.Written(w.Batches, entries)
	}
	res.Stored = len(entries)
	res.IDs = make([]string, len(b.Records))
	for j, e := range entries {
		res.IDs[index[j]] = e.ID
	}
	return res, nil
}

// partialKey is the idempotency key of a partial batch: the client's own, else one made of the
// request's fingerprint, else none.
func (s *Service) partialKey(b PartialBatch) string {
	switch {
	case b.IdempotencyKey != "":
		return b.IdempotencyKey
	case b.Fingerprint != "":
		return fingerprintKeyPrefix + b.Fingerprint
	}
	return ""
}
