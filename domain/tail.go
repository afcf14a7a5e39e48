package domain

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
)

// TailPosition is a place in a project's ingest order: the entry at position Pos of the batch
// Tx. A tail resumes after it. Tx orders batches in commit order as the store guarantees it (see
// TailStore); Pos orders the entries of one batch. Pos -1 stands before every entry of Tx. A
// position is its project's own: the store numbers each project's batches apart, so that what
// a client sees of positions tells nothing of other projects' writes.
type TailPosition struct {
	Tx  uint64
	Pos int64
}

// TailEntry is an entry as a tail delivers it, with its place in ingest order.
type TailEntry struct {
	LogEntry
	At TailPosition
	// Memo, when not nil, is shared by every tail of this instance that hands the entry on: a
	// transport may keep its rendering of the entry there, made once for all of them.
	Memo TailMemo
}

// TailMemo holds bytes made once, on first use.
type TailMemo interface {
	// Bytes returns the bytes render(e) returned at the first call of Bytes on the memo. The
	// entry is passed, not captured by render, so that a call makes no closure to allocate.
	Bytes(e *TailEntry, render func(*TailEntry) []byte) []byte
}

// TailQuery asks for the entries of a project matching the filter (its Start and End are not
// used) that come after After in ingest order, at most Limit of them.
type TailQuery struct {
	LogFilter
	After TailPosition
	Limit int
	// Before, when not zero, is a horizon the store returned (tailhub.Store): the read takes
	// only entries before it, every one of them final; when zero it goes up to what is final
	// as it reads.
	Before TailPosition
	// Skip are batches (their TailPosition.Tx) the read leaves out: the caller holds them.
	Skip []uint64
}

// TailStore is what a tail's start reads of a store that follows ingest order; the Tailer
// declares what it reads after (tailhub.Store).
type TailStore interface {
	// TailHead returns the position after which come the entries committed from now on (and
	// possibly a few committed just before). KindNotFound if the project does not exist.
	TailHead(ctx context.Context, projectID string) (TailPosition, error)
	// ReplayTail returns, in ingest order, the last limit entries matching f (Start and End
	// included) at or before upTo.
	ReplayTail(ctx context.Context, f LogFilter, upTo TailPosition, limit int) ([]TailEntry, error)
}

// tailTokenVersion opens every tail token: the tokens of the first format (JSON, with a position
// that was a database-wide transaction number) do not decode, and are answered 400.
const tailTokenVersion = 2

// maxTailToken bounds the text of a tail token: a longer one is refused before it is decoded.
const maxTailToken = 32

// The bounds of a position the stores hold: batch numbers are 64-bit signed integers, places
// in a batch 32-bit ones.
const (
	maxTailTx  = 1<<63 - 1
	maxTailPos = 1<<31 - 1
)

// EncodeTailToken renders p as the opaque text a client resumes with (the SSE event id): a
// version byte, then the batch number and the place in the batch plus one as unsigned varints,
// in unpadded URL-safe base64.
func EncodeTailToken(p TailPosition) string {
	b := make([]byte, 1, 1+2*binary.MaxVarintLen64)
	b[0] = tailTokenVersion
	b = binary.AppendUvarint(b, p.Tx)
	b = binary.AppendUvarint(b, uint64(p.Pos+1))
	return base64.RawURLEncoding.EncodeToString(b)
}

// DecodeTailToken parses text made by EncodeTailToken; anything else, a position out of the
// stores' range included, is KindInvalid on param. The text is never echoed back.
func DecodeTailToken(param, text string) (TailPosition, error) {
	bad := ParamError(param, "is not a tail position this service issued")
	if len(text) > maxTailToken {
		return TailPosition{}, bad
	}
	b, err := base64.RawURLEncoding.DecodeString(text)
	if err != nil || len(b) < 3 || b[0] != tailTokenVersion {
		return TailPosition{}, bad
	}
	tx, n := binary.Uvarint(b[1:])
	if n <= 0 || tx > maxTailTx {
		return TailPosition{}, bad
	}
	pos, m := binary.Uvarint(b[1+n:])
	if m <= 0 || 1+n+m != len(b) || pos > maxTailPos+1 {
		return TailPosition{}, bad
	}
	p := TailPosition{Tx: tx, Pos: int64(pos) - 1}
	if EncodeTailToken(p) != text { // one text per position: no padding bits, no long varints
		return TailPosition{}, bad
	}
	return p, nil
}

// TailRequest is what a client asks of a tail: the filter, and where to start. Resume (the
// last event id a client saw) wins over Cursor; with neither the tail starts at the entries
// ingested from now on, after replaying, when StartTime is set, the last ReplayLimit entries
// with Time >= StartTime.
type TailRequest struct {
	LogFilter
	Resume      string
	Cursor      string
	StartTime   *int64
	ReplayLimit int
	// Client names who holds the tail (see Tailer.Open) when the service is open (no key).
	Client string
	// Started, when not nil, is called once the tail's start is done (it has caught up): the
	// transport gives back what the start held, such as its share of the in-flight limits.
	Started func()
}

// TailFunc receives the entries a tail found, in order, to send together; it is called with
// none after each idle wait, so that a transport may keep the connection alive. An error from
// it ends the tail and is returned unchanged. The entries may be shared with other tails: fn
// must not change them, nor keep the slice after it returns.
type TailFunc func(entries []TailEntry) error

// Before reports whether p comes before q in ingest order.
func (p TailPosition) Before(q TailPosition) bool {
	return p.Tx < q.Tx || (p.Tx == q.Tx && p.Pos < q.Pos)
}

// Tail follows the project's entries matching r in ingest order, handing them to fn, until
// ctx ends (nil then), the project is deleted (KindNotFound) or fn fails. Every entry matching
// the filter after the start position is handed on exactly once, in order, whichever instance
// wrote it; a client that resumes from the position of the last entry it received loses
// nothing and sees nothing twice.
//
// Once its start is fixed (the check, the replay) the tail is the Tailer's (Options.Tailer),
// which follows the project from there.
func (s *Service) Tail(ctx context.Context, r TailRequest, fn TailFunc) error {
	f, err := s.limits.validateFilter(r.LogFilter)
	if err != nil {
		return err
	}
	f.Start, f.End = nil, nil
	if err := authorize(ctx, f.ProjectID); err != nil {
		return err
	}
	var start *TailPosition
	param := ""
	switch {
	case r.Resume != "":
		param = s.names.Resume
	case r.Cursor != "":
		param = "cursor"
	}
	if param != "" {
		p, err := DecodeTailToken(param, cmp.Or(r.Resume, r.Cursor))
		if err != nil {
			return err
		}
		start = &p
	}
	replay := r.ReplayLimit
	switch {
	case replay == 0:
		replay = 100
	case replay < 0 || replay > s.limits.MaxPageSize:
		return ParamError("limit", fmt.Sprintf("must be between 1 and %d", s.limits.MaxPageSize))
	}
	// The start (the project's check, the replay, the catch-up from a resumed position) is
	// bounded as a whole, and holds the request's share of the limits on requests in flight
	// (TailRequest.Started) until it is done.
	sctx, startDone := context.WithCancel(ctx)
	if s.tailStart > 0 {
		sctx, startDone = context.WithTimeout(ctx, s.tailStart)
	}
	defer startDone()
	if _, err := s.project(sctx, f.ProjectID); err != nil {
		return s.startErr(ctx, sctx, err)
	}
	if s.tailStore == nil || s.tailer == nil {
		return Errorf(KindInternal, "the store cannot read in ingest order")
	}
	who, _ := PrincipalFrom(ctx)
	holder := who.KeyID
	if holder == "" {
		holder = "client " + r.Client
	}
	closeTail, err := s.tailer.Open(holder)
	if err != nil {
		return Errorf(KindOf(err), "%s; %s", err.Error(), s.retryHint())
	}
	defer closeTail()
	// The start's reads (the replay, the catch-up) are reads like a listing's, and can cost as
	// much: they hold one of the key's read shares (see acquireRead) until the tail has caught
	// up, so a key's tails cannot crowd another key's reads out of the store.
	releaseRead, err := s.acquireRead(sctx, f.ProjectID)
	if err != nil {
		return s.startErr(ctx, sctx, err)
	}
	endRead := func() {
		if releaseRead != nil {
			releaseRead()
			releaseRead = nil
		}
	}
	defer endRead()

	head, err := s.tailStore.TailHead(sctx, f.ProjectID)
	if err != nil {
		return s.startErr(ctx, sctx, s.tailErr(ctx, f.ProjectID, err))
	}
	switch {
	case start != nil && start.Tx > head.Tx:
		// Not a position of this project yet: a tail from there would skip what comes first.
		return ParamError(param, "is not a tail position of this project")
	case start == nil:
		start = &head
		if r.StartTime != nil {
			rf := f
			rf.Start = r.StartTime
			old, err := s.tailStore.ReplayTail(sctx, rf, head, replay)
			if err != nil {
				return s.startErr(ctx, sctx, s.tailErr(ctx, f.ProjectID, err))
			}
			if len(old) > 0 {
				if err := fn(old); err != nil {
					return err
				}
			}
		}
	}
	// The start is fixed: tell the transport now, so a client knows its tail is open.
	if err := fn(nil); err != nil {
		return err
	}
	// The Tailer's errors are its reads' (mapped here) or fn's (returned unchanged).
	fnFailed := false
	err = s.tailer.Follow(ctx, TailFollow{Filter: f, After: *start, Start: sctx,
		Fn: func(es []TailEntry) error {
			err := fn(es)
			fnFailed = err != nil
			return err
		},
		Started: func() {
			endRead()
			startDone()
			if r.Started != nil {
				r.Started()
			}
		},
		Check: func(ctx context.Context) error {
			_, err := s.project(ctx, f.ProjectID)
			return err
		},
	})
	if err == nil || fnFailed {
		return err
	}
	return s.tailErr(ctx, f.ProjectID, err)
}

// retryHint tells a refused client when to retry: the transport's answer says (Names.RetryAfter),
// or later.
func (s *Service) retryHint() string {
	if s.names.RetryAfter == "" {
		return "retry later"
	}
	return "retry after the time in " + s.names.RetryAfter
}

// startErr is the answer to a tail whose start failed: KindUnavailable when it took longer than
// Options.TailStartTimeout (ctx, the request's, still open; sctx, the start's, ended), err else.
func (s *Service) startErr(ctx, sctx context.Context, err error) error {
	if ctx.Err() == nil && errors.Is(sctx.Err(), context.DeadlineExceeded) {
		return Errorf(KindUnavailable, "the tail's start took longer than %s; retry, or resume from a later position", s.tailStart)
	}
	return err
}

// tailErr is the answer to a failed tail read: nothing when the tail was ended, a project
// that is gone as KindNotFound.
func (s *Service) tailErr(ctx context.Context, projectID string, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	if KindOf(err) == KindNotFound {
		return projectNotFound(projectID)
	}
	return fmt.Errorf("tail: %w", err)
}
