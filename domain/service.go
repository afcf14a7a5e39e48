// Package domain holds the service's entities, rules, errors and ports, and the use cases that tie
// them together. It knows nothing of HTTP, Twirp, SQL or generated code: adapters call a *Service
// and implement its ports.
package domain

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// Options configure a Service. Zero fields take defaults (DefaultLimits, the wall clock, a randomly
// seeded source) except NewID, which the composition root supplies: ids must be UUIDv7 text in
// lowercase, strictly increasing within a process (the listing order relies on it), and their
// generator is a library the domain does not import.
type Options struct {
	Limits Limits
	Now    func() time.Time
	NewID  func() string
	Rand   Random
	// TailStartTimeout, when positive, bounds a tail's start (the project's check, the replay,
	// the reads that catch up from a resumed position): a start that takes longer fails as
	// KindUnavailable.
	TailStartTimeout time.Duration
	// Tailer follows tails once started; without it (or without a TailStore) Tail is
	// unavailable.
	Tailer Tailer
	// ReadShares bounds each key's store reads; without it they are not bounded.
	ReadShares ReadShares
	// Names are what the transports call the parts of a request the answers name; zero fields
	// take plain words.
	Names Names
	// Notifier checks alert targets and delivers notifications; without it no rule can have a
	// target, so none can be created.
	Notifier Notifier
}

// Names are what the transports call the parts of a request that the service's answers name:
// the composition root sets them from the transports, so that the domain knows none of them.
type Names struct {
	// IdempotencyKey carries a write's idempotency key.
	IdempotencyKey string
	// Project names the project of a partial batch (CreateLogsPartial) sent by an admin key.
	Project string
	// Resume is the position a tail resumes after (TailRequest.Resume).
	Resume string
	// RetryAfter, when set, is where a refusal tells a client when to retry.
	RetryAfter string
}

// withDefaults fills the zero fields of n with plain words.
func (n Names) withDefaults() Names {
	n.IdempotencyKey = cmp.Or(n.IdempotencyKey, "idempotency key")
	n.Project = cmp.Or(n.Project, "project")
	n.Resume = cmp.Or(n.Resume, "resume")
	return n
}

// Service carries out the use cases of projects, logs and hats.
type Service struct {
	inflight inFlight
	// writes tells the retention sweep whether ingest is competing for the store.
	writes writeActivity
	store  Store
	limits Limits
	now    func() time.Time
	newID  func() string
	rand   Random

	// tailStore is the store when it can read in ingest order (nil: Tail is unavailable).
	tailStore TailStore
	tailStart time.Duration
	tailer    Tailer

	// shares bounds each key's store reads (see acquireRead).
	shares ReadShares
	names  Names

	notifier Notifier
	// alertStore is the store when it keeps alert counts (nil: each evaluation counts its
	// window through the stats path).
	alertStore AlertCountStore
}

// NewService returns a Service over store.
func NewService(store Store, opts Options) *Service {
	s := &Service{store: store, limits: opts.Limits, now: opts.Now, newID: opts.NewID, rand: opts.Rand, tailStart: opts.TailStartTimeout, tailer: opts.Tailer, shares: opts.ReadShares, names: opts.Names.withDefaults(), notifier: opts.Notifier}
	s.tailStore, _ = store.(TailStore)
	s.alertStore, _ = store.(AlertCountStore)
	if s.limits == (Limits{}) {
		s.limits = DefaultLimits()
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.newID == nil {
		s.newID = func() string { return "" } // caught by checkID before anything is stored
	}
	if s.rand == nil {
		s.rand = sharedRand{}
	}
	return s
}

// Limits returns the limits the service enforces.
func (s *Service) Limits() Limits { return s.limits }

// ValidID reports whether id has the form of the ids this service issues (a UUID in lower case).
// Adapters use it to check ids they read from configuration before the service sees them.
func ValidID(id string) bool { return validID(id) }

// validID reports whether id has the form of the ids this service issues. An id of any other
// form cannot name anything, so lookups answer KindNotFound without asking the store.
func validID(id string) bool {
	if len(id) != 36 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case i == 8 || i == 13 || i == 18 || i == 23:
			if c != '-' {
				return false
			}
		case '0' <= c && c <= '9', 'a' <= c && c <= 'f':
		default:
			return false
		}
	}
	return true
}

// errNoIDs is what a Service built without a working Options.NewID answers instead of storing.
var errNoIDs = &Error{Kind: KindInternal, Msg: "the service has no id generator"}

func projectNotFound(id string) error {
	return Errorf(KindNotFound, "no project with id %s", Brief(id))
}

// CreateProject creates a project named in.Name.
func (s *Service) CreateProject(ctx context.Context, in ProjectInput) (Project, error) {
	if err := authorize(ctx, ""); err != nil {
		return Project{}, err
	}
	if err := s.limits.validateProject(in); err != nil {
		return Project{}, err
	}
	now := storeTime(s.now())
	p := Project{ID: s.newID(), Name: in.Name, CreatedAt: now, UpdatedAt: now, RetentionDays: in.RetentionDays.Value}
	if !in.RetentionDays.Set && s.limits.DefaultRetentionDays > 0 {
		days := s.limits.DefaultRetentionDays
		p.RetentionDays = &days
	}
	if !validID(p.ID) {
		return Project{}, errNoIDs
	}
	if err := s.store.CreateProject(ctx, p); err != nil {
		return Project{}, fmt.Errorf("create project: %w", err)
	}
	return p, nil
}

// GetProject returns the project with the given id; KindNotFound if there is none. A project key
// may read its own project only (KindForbidden otherwise, whether or not the id exists).
func (s *Service) GetProject(ctx context.Context, id string) (Project, error) {
	if err := authorize(ctx, id); err != nil {
		return Project{}, err
	}
	return s.project(ctx, id)
}

func (s *Service) project(ctx context.Context, id string) (Project, error) {
	if !validID(id) {
		return Project{}, projectNotFound(id)
	}
	p, err := s.store.GetProject(ctx, id)
	if KindOf(err) == KindNotFound {
		return Project{}, projectNotFound(id)
	}
	if err != nil {
		return Project{}, fmt.Errorf("get project: %w", err)
	}
	return p, nil
}

// ListProjects returns every project, oldest first.
func (s *Service) ListProjects(ctx context.Context) ([]Project, error) {
	if err := authorize(ctx, ""); err != nil {
		return nil, err
	}
	ps, err := s.store.ListProjects(ctx)
	if err != nil {
		return nil, fmt.Errorf("list projects: %w", err)
	}
	return ps, nil
}

// UpdateProject replaces a project's name and retention (left out: kept forever). UpdatedAt
// always advances, even within one clock tick.
func (s *Service) UpdateProject(ctx context.Context, id string, in ProjectInput) (Project, error) {
	if err := authorize(ctx, ""); err != nil {
		return Project{}, err
	}
	if err := s.limits.validateProject(in); err != nil {
		return Project{}, err
	}
	p, err := s.project(ctx, id)
	if err != nil {
		return Project{}, err
	}
	p.Name, p.RetentionDays = in.Name, in.RetentionDays.Value
	return s.saveProject(ctx, p)
}

// saveProject stores p, as changed, with UpdatedAt advanced past its stored value.
func (s *Service) saveProject(ctx context.Context, p Project) (Project, error) {
	now := storeTime(s.now())
	if !now.After(p.UpdatedAt) {
		now = p.UpdatedAt.Add(time.Microsecond)
	}
	p.UpdatedAt = now
	err := s.store.UpdateProject(ctx, p)
	if KindOf(err) == KindNotFound {
		return Project{}, projectNotFound(p.ID)
	}
	if err != nil {
		return Project{}, fmt.Errorf("update project: %w", err)
	}
	return p, nil
}

// DeleteProject deletes a project and all its log entries; KindNotFound if there is none.
func (s *Service) DeleteProject(ctx context.Context, id string) error {
	if err := authorize(ctx, ""); err != nil {
		return err
	}
	if !validID(id) {
		return projectNotFound(id)
	}
	err := s.store.DeleteProject(ctx, id)
	if KindOf(err) == KindNotFound {
		return projectNotFound(id)
	}
	if err != nil {
		return fmt.Errorf("delete project: %w", err)
	}
	return nil
}

// CreateLogs validates a batch and stores all of it or nothing, and says how many entries it
// stored. Bad entries are KindInvalid, a batch over the limit KindTooLarge, entries naming a
// project that does not exist KindUnknownProject, entries beyond a project key's project
// KindForbidden; each lists the offending entries, at most Limits.MaxFieldErrors of them, and
// says how many more there are.
//
// With an idempotency key the batch is stored at most once per key, API key and projects within
// the idempotency window: a retry of the same batch answers the first result with Replayed set,
// another batch under the same key is KindKeyReused, a retry while the first is still being
// handled is KindConflict.
func (s *Service) CreateLogs(ctx context.Context, in []LogInput, idempotencyKey string) (Created, error) {
	who, ok := PrincipalFrom(ctx)
	if !ok {
		return Created{}, Errorf(KindUnauthenticated, "authentication required")
	}
	if idempotencyKey != "" && !validIdempotencyKey(idempotencyKey) {
		return Created{}, ParamError(s.names.IdempotencyKey, "must be 1 to 255 printable ASCII characters")
	}
	entries, err := s.buildEntries(in)
	if err != nil {
		return Created{}, err
	}
	if !validID(entries[0].ID) {
		return Created{}, errNoIDs
	}
	if !who.Admin {
		foreign := fieldErrors{max: s.limits.MaxFieldErrors}
		for i, e := range entries {
			if e.ProjectID != who.ProjectID {
				foreign.add(i, "project_id", "this key does not cover this project")
			}
		}
		if err := foreign.err(KindForbidden, "this key does not cover every project of the batch"); err != nil {
			return Created{}, err
		}
	}
	// An id of a form this service never issues cannot name a project: answer without the store.
	var malformed []string
	for _, e := range entries {
		if !validID(e.ProjectID) {
			malformed = append(malformed, e.ProjectID)
		}
	}
	if len(malformed) > 0 {
		return Created{}, s.unknownProjects(entries, malformed)
	}

	var rec *IdempotencyRecord
	if idempotencyKey != "" {
		rec = &IdempotencyRecord{Scope: idempotencyScope(who, entries), Key: idempotencyKey, Fingerprint: fingerprint(in), Created: len(entries), CreatedAt: storeTime(s.now())}
		claim := rec.Scope + "\x00" + rec.Key
		if !s.inflight.claim(claim) {
			return Created{}, Errorf(KindConflict, "a request with this %s is still being handled; retry later", s.names.IdempotencyKey)
		}
		defer s.inflight.release(claim)
	}
	done := s.writes.begin()
	w, err := s.store.CreateLogs(ctx, entries, s.logWrite(entries, rec, s.now().UnixMilli()))
	done()
	var missing *MissingProjectsError
	if errors.As(err, &missing) {
		return Created{}, s.unknownProjects(entries, missing.IDs)
	}
	if KindOf(err) == KindExpired {
		return Created{}, err // the domain's own answer, from admitFunc
	}
	if err != nil {
		return Created{}, fmt.Errorf("create logs: %w", err)
	}
	if prior := w.Prior; prior != nil {
		if prior.Fingerprint != rec.Fingerprint {
			return Created{}, Errorf(KindKeyReused, "this %s was used for a different batch", s.names.IdempotencyKey)
		}
		return Created{N: prior.Created, Replayed: true}, nil
	}
	if s.tailer != nil {
		s.tailer.Written(w.Batches, entries)
	}
	return Created{N: len(entries)}, nil
}

// logWrite is how a batch is written: with its idempotency record, if any, under the retention
// rule.
func (s *Service) logWrite(entries []LogEntry, rec *IdempotencyRecord, now int64) LogWrite {
	return LogWrite{Record: rec, Window: s.limits.IdempotencyWindow, Admit: s.admitFunc(entries, now)}
}

// unknownProjects is the KindUnknownProject answer to a batch naming the given projects, which
// do not exist: it names each entry that names one, up to MaxFieldErrors, and counts the rest.
func (s *Service) unknownProjects(entries []LogEntry, ids []string) error {
	missing := make(map[string]bool, len(ids))
	for _, id := range ids {
		missing[id] = true
	}
	bad := fieldErrors{max: s.limits.MaxFieldErrors}
	for i, e := range entries {
		if missing[e.ProjectID] {
			bad.add(i, "project_id", "no project with this id")
		}
	}
	if err := bad.err(KindUnknownProject, "unknown project"); err != nil {
		return err
	}
	// The store named projects no entry names: a fault of the store, not of the request.
	return fmt.Errorf("create logs: the store reports %d unknown projects the batch does not name", len(ids))
}

// SweepIdempotency forgets idempotency keys older than the window and says how many.
func (s *Service) SweepIdempotency(ctx context.Context) (int64, error) {
	n, err := s.store.SweepIdempotency(ctx, s.now().Add(-s.limits.IdempotencyWindow))
	if err != nil {
		return 0, fmt.Errorf("sweep idempotency keys: %w", err)
	}
	return n, nil
}

// pageQuery checks a listing's parameters and fills in defaults.
func (s *Service) pageQuery(q LogQuery) (LogQuery, error) {
	f, err := s.limits.validateFilter(q.LogFilter)
	if err != nil {
		return q, err
	}
	q.LogFilter = f
	switch {
	case q.Limit == 0:
		q.Limit = s.limits.DefaultPageSize
	case q.Limit < 0 || q.Limit > s.limits.MaxPageSize:
		return q, ParamError("limit", fmt.Sprintf("must be between 1 and %d", s.limits.MaxPageSize))
	}
	// DecodeCursor checks the cursors of clients; this covers a Cursor any other way in builds.
	if q.After != nil && !validID(q.After.ID) {
		return q, ParamError("cursor", "is not a cursor this service issued")
	}
	if q.After != nil && q.After.Desc != q.Desc {
		return q, ParamError("cursor", "belongs to a listing in the other order")
	}
	return q, nil
}

// ListLogs streams one page of the project's entries matching q to fn (see LogStore.ListLogs).
// A zero q.Limit means DefaultPageSize. The project must exist (KindNotFound otherwise).
func (s *Service) ListLogs(ctx context.Context, q LogQuery, fn PageFunc) error {
	q, err := s.pageQuery(q)
	if err != nil {
		return err
	}
	// Entries past the project's retention are gone to readers from the moment it changes: the
	// store compares them with now in the listing's own statement.
	now, release, err := s.openRead(ctx, q.ProjectID)
	if err != nil {
		return err
	}
	q.Now = now
	defer release() // after the page has been streamed: the rows hold a connection till then
	// The store tells a missing project apart itself, and only for an empty page: a listing
	// costs one round trip, not two.
	err = s.store.ListLogs(ctx, q, fn)
	if KindOf(err) == KindNotFound {
		return projectNotFound(q.ProjectID)
	}
	if err != nil {
		return fmt.Errorf("list logs: %w", err)
	}
	return nil
}

// DeleteLogs deletes the project's entries matching f and returns how many it deleted. The project
// must exist (KindNotFound otherwise).
func (s *Service) DeleteLogs(ctx context.Context, f LogFilter) (int64, error) {
	f, err := s.limits.validateFilter(f)
	if err != nil {
		return 0, err
	}
	if err := authorize(ctx, f.ProjectID); err != nil {
		return 0, err
	}
	if _, err := s.project(ctx, f.ProjectID); err != nil {
		return 0, err
	}
	// A filtered delete reads every entry its filter selects, as a search does.
	release, err := s.acquireRead(ctx, f.ProjectID)
	if err != nil {
		return 0, err
	}
	defer release()
	n, err := s.store.DeleteLogs(ctx, f)
	if err != nil {
		return 0, fmt.Errorf("delete logs: %w", err)
	}
	return n, nil
}

// sharedRand draws from math/rand/v2's top-level source, which is safe for concurrent use: the
// service serves many calls at once, and a *rand.Rand is not.
type sharedRand struct{}

func (sharedRand) IntN(n int) int { return rand.IntN(n) }
