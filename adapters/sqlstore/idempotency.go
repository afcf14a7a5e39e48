package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/jmoiron/sqlx"

	"example.com/obsvc/domain"
)

// The statements of claimKey: each names the record's whole key (scope, key), so on Citus, where
// idempotency_keys is distributed by scope, each is one task on one node.
const (
	idempotencyLookup = "SELECT fingerprint, created FROM idempotency_keys WHERE scope = ? AND key = ? AND created_at >= ?"
	idempotencyExpire = "DELETE FROM idempotency_keys WHERE scope = ? AND key = ? AND created_at < ?"
	idempotencyInsert = "INSERT INTO idempotency_keys (scope, key, fingerprint, created, created_at) VALUES (?, ?, ?, ?, ?)"
)

// claimKey returns the live record of rec's key if there is one; otherwise it inserts rec,
// replacing an expired record of the same key.
func (s *Store) claimKey(ctx context.Context, tx *sqlx.Tx, rec *domain.IdempotencyRecord, window time.Duration) (*domain.IdempotencyRecord, error) {
	cutoff := s.eng.timeArg(rec.CreatedAt.Add(-window))
	var found struct {
		Fingerprint string `db:"fingerprint"`
		Created     int    `db:"created"`
	}
	err := tx.GetContext(ctx, &found, s.bind(idempotencyLookup), rec.Scope, rec.Key, cutoff)
	switch {
	case err == nil:
		return &domain.IdempotencyRecord{Scope: rec.Scope, Key: rec.Key, Fingerprint: found.Fingerprint, Created: found.Created}, nil
	case !errors.Is(err, sql.ErrNoRows):
		return nil, s.translate("look up idempotency key", err)
	}
	if _, err := tx.ExecContext(ctx, s.bind(idempotencyExpire), rec.Scope, rec.Key, cutoff); err != nil {
		return nil, s.translate("expire idempotency key", err)
	}
	_, err = tx.ExecContext(ctx, s.bind(idempotencyInsert),
		rec.Scope, rec.Key, rec.Fingerprint, rec.Created, s.eng.timeArg(rec.CreatedAt))
	if err != nil && s.eng.classify(err) == errUnique {
		// Another instance wrote the same key between our look-up and insert.
		return nil, domain.Errorf(domain.KindConflict, "a request with this Idempotency-Key is still being handled; retry later")
	}
	return nil, s.translate("record idempotency key", err)
}

// SweepIdempotency implements domain.LogStore.
func (s *Store) SweepIdempotency(ctx context.Context, before time.Time) (int64, error) {
	res, err := s.w.ExecContext(ctx, s.bind("DELETE FROM idempotency_keys WHERE created_at < ?"), s.eng.timeArg(before))
	if err != nil {
		return 0, s.translate("sweep idempotency keys", err)
	}
	n, err := res.RowsAffected()
	return n, s.translate("sweep idempotency keys", err)
}
