package sqlstore

import (
	"context"

	"github.com/jmoiron/sqlx"
)

// sqliteTail is the tail's SQL on SQLite, which has no transaction ids: a batch takes the next
// number of tail_clock (migration 00007), which its rows carry as tail_tx and tail_batches
// records, a parameter of both.
type sqliteTail struct{}

func (sqliteTail) clock(ctx context.Context, tx *sqlx.Tx) (uint64, error) {
	var batch int64
	if err := tx.GetContext(ctx, &batch, "UPDATE tail_clock SET tx = tx + 1 WHERE id = 1 RETURNING tx"); err != nil {
		return 0, err
	}
	return uint64(batch), nil
}

func (sqliteTail) txValue() string { return "?" }

// skip passes the batch numbers as one JSON array, which json_each opens.
func (sqliteTail) skip(seqs []uint64) (string, any) {
	return " AND b.seq NOT IN (SELECT value FROM json_each(?))", "[" + joinDecimal(seqs) + "]"
}
