package sqlstore

import (
	"context"

	"github.com/jmoiron/sqlx"
)

// postgresTail is the tail's SQL on PostgreSQL and Citus: the rows of a batch carry the
// writing transaction's id, logs.tail_tx's default (migration 00007), which tail_batches
// records by the same function in the same transaction.
type postgresTail struct{}

func (postgresTail) clock(context.Context, *sqlx.Tx) (uint64, error) { return 0, nil }

func (postgresTail) txValue() string { return "pg_current_xact_id()" }

// skip passes the batch numbers as one bigint array parameter, in its text form.
func (postgresTail) skip(seqs []uint64) (string, any) {
	return " AND b.seq <> ALL (CAST(? AS bigint[]))", "{" + joinDecimal(seqs) + "}"
}
