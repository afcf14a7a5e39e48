package domain

import (
	"context"
	"time"
)

// ProjectStore persists projects.
type ProjectStore interface {
	// CreateProject stores a new project.
	CreateProject(ctx context.Context, p Project) error
	// GetProject returns the project; KindNotFound if there is none.
	GetProject(ctx context.Context, id string) (Project, error)
	// ListProjects returns every project ordered by CreatedAt, then ID.
	ListProjects(ctx context.Context) ([]Project, error)
	// UpdateProject replaces the name, retention and UpdatedAt of an existing project;
	// KindNotFound if absent.
	UpdateProject(ctx context.Context, p Project) error
	// DeleteProject removes the project and all its log entries; KindNotFound if absent.
	DeleteProject(ctx context.Context, id string) error
}

// LogStore persists log entries.
type LogStore interface {
	// CreateLogs stores every entry or none. If any entry names a project that does not exist it
	// stores nothing and returns a *MissingProjectsError listing those projects' ids, each once;
	// the service, not the store, phrases the answer to the client. w says what else the write
	// does (see LogWrite).
	CreateLogs(ctx context.Context, entries []LogEntry, w LogWrite) (Written, error)
	// SweepIdempotency deletes the records made before t and says how many.
	SweepIdempotency(ctx context.Context, before time.Time) (int64, error)
	// ListLogs streams one page of entries matching q, ordered by (Time, ID) ascending or, with
	// q.Desc, descending, starting after q.After. It calls fn once with the page; the page's
	// entries are read from the store while fn ranges over them, in one consistent snapshot.
	// If the project does not exist it returns KindNotFound without calling fn. Entries with
	// Time before q.Now minus the project's retention are left out, as of the same statement.
	ListLogs(ctx context.Context, q LogQuery, fn PageFunc) error
	// LogContext finds the project's entry q.ID, unless its Time is before q.Now minus the
	// project's retention, then calls fn once with it and two streams of its neighbours in
	// (Time, ID) order, each side read from the entry by its own statement and limited to
	// *q.Before and *q.After entries matching q.Parsed, expired ones left out as ListLogs leaves
	// them out. KindNotFound, without calling fn, when there is no such entry (or project).
	LogContext(ctx context.Context, q ContextQuery, fn ContextFunc) error
	// DeleteLogs removes the entries matching f and returns how many it removed.
	DeleteLogs(ctx context.Context, f LogFilter) (int64, error)
	// LogStats counts the entries matching q's filter (Levels, never Level) with Time in
	// [Start, End], per bucket of q.Step from Start and per value of q.By, in one consistent
	// snapshot; entries before q.Now minus the project's retention are left out as ListLogs
	// leaves them out. KindNotFound if the project does not exist.
	LogStats(ctx context.Context, q StatsQuery) ([]BucketCount, error)
	// SweepLogs deletes, in one transaction, at most limit entries of the project with Time
	// before now (Unix ms) minus the project's retention as stored at that moment (none when it
	// keeps entries forever), and says how many. ErrSweepBusy when another instance is sweeping.
	SweepLogs(ctx context.Context, projectID string, now int64, limit int) (int64, error)
}

// LogWrite is what a CreateLogs does beside storing the entries.
type LogWrite struct {
	// Record, when not nil, is stored in the same transaction, unless a record with the same
	// Scope and Key made at or after Record.CreatedAt minus Window exists: then nothing is stored
	// and that record is Written.Prior. A concurrent writer of the same key may make it answer
	// KindConflict.
	Record *IdempotencyRecord
	Window time.Duration
	// Admit, when not nil, is called once in the same transaction, after the projects are found,
	// with the retention of those that have one; an error from it stores nothing and is returned
	// unchanged.
	Admit AdmitFunc
}

// Written is what CreateLogs did.
type Written struct {
	// Prior is the record of the earlier batch with the same key (LogWrite.Record): nothing was
	// stored.
	Prior *IdempotencyRecord
	// Batches, set by a store that follows ingest order (TailStore), is the batch's number in
	// each of its projects' ingest order: entry i of the batch, as handed to CreateLogs, is at
	// TailPosition{Batches[its project], i}.
	Batches map[string]uint64
}

// FacetStore counts what a project's entries hold, for exploring them.
type FacetStore interface {
	// Facets answers, for each of q.Targets (named q.Fields[i] in the answer, in that order),
	// its q.Limit most common values as JSON text among the entries matching q's filter (Levels,
	// never Level) with Time in [Start, End], ties bytewise by the value's JSON text (by the
	// text itself for the entry's own fields), with Other and Missing, all exact and in one
	// consistent snapshot; entries before q.Now minus the project's retention are left out as
	// ListLogs leaves them out. KindNotFound if the project does not exist.
	Facets(ctx context.Context, q FacetsQuery) ([]Facet, error)
	// Fields answers the top-level attribute keys of the entries matching q's filter with Time
	// in [Start, End], with how many entries hold each, most common first, ties by key
	// bytewise, at most q.Limit of them; one snapshot, retention as Facets. KindNotFound if the
	// project does not exist.
	Fields(ctx context.Context, q FieldsQuery) ([]FieldCount, error)
}

// Store is everything the service needs from storage.
type Store interface {
	ProjectStore
	LogStore
	FacetStore
	SearchStore
	AlertStore
}

// ReadShares bounds how many store reads (listings, searches, stats, facets, filtered deletes, a
// tail's start) each key runs at once, so that one key's expensive reads cannot hold every
// connection of the store while another key waits (see Limits.MaxReadsPerKey).
type ReadShares interface {
	// Acquire takes one of key's read shares, waiting a while for one when all are taken, and
	// returns its release: KindRateLimited when none frees in time, KindUnavailable when ctx
	// ends first.
	Acquire(ctx context.Context, key string) (release func(), err error)
}

// Tailer follows projects' entries live once a tail has started (see Service.Tail), and hears
// of every batch committed through this instance.
type Tailer interface {
	// Open counts a tail of holder (an API key, or a client) in, and returns its close; past
	// the Tailer's bounds on open tails it counts nothing and returns a KindRateLimited error
	// that says them.
	Open(holder string) (close func(), err error)
	// Follow hands f.Fn, in ingest order and once each, every entry of f.Filter's project that
	// matches the filter and comes after f.After, whichever instance wrote it, until ctx ends
	// (nil), f.Fn fails (its error, unchanged) or a read or f.Check fails (that error).
	Follow(ctx context.Context, f TailFollow) error
	// Written tells of a batch committed through this instance: its entries, and the batch's
	// number in each of its projects' ingest order (Written.Batches; nil when the store does
	// not follow ingest order).
	Written(batches map[string]uint64, entries []LogEntry)
}

// TailFollow is one tail as Service.Tail hands it to its Tailer once its start is fixed.
type TailFollow struct {
	// Filter is the tail's, validated, without time bounds.
	Filter LogFilter
	// After is the place up to which every matching entry has been handed on.
	After TailPosition
	// Fn receives the entries (see TailFunc).
	Fn TailFunc
	// Start bounds the reads of the tail until it first catches up; Started is called once
	// then, and the Tailer bounds each read that follows.
	Start   context.Context
	Started func()
	// Check says whether the project still exists; an open tail calls it now and then.
	Check func(ctx context.Context) error
}
