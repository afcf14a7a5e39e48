package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
)

// Citus (distributed PostgreSQL) is detected, not configured: when the database the service is
// given has the citus extension (a Citus coordinator), the migrations are followed by
// distributeSchema, which makes the schema a distributed one:
//
//   - projects is a reference table: a copy on every node, so that the existence check of a batch,
//     the retention subquery of a listing and the foreign keys of per-project tables are local to
//     whichever node holds a project's shard;
//   - searches (saved searches) is a reference table too: small configuration rows read by id
//     alone (an admin reads one without naming its project), each read one task on one node,
//     its foreign key to projects one between reference tables, and a later per-project table
//     may hold a foreign key to it wherever its shards are;
//   - every other table with a project_id column is hash-distributed by project_id and co-located
//     with logs, so that every per-project statement (they all name project_id) is routed to the
//     one node holding that project's shards;
//   - idempotency_keys is distributed by scope, the leading column of its primary key (a scope
//     is the hash of the key id and every project of the batch, so it has no one project);
//   - goose's version table stays on the coordinator.
//
// It is generic on purpose: a table that a later migration adds with a project_id column is
// distributed the next time an instance starts, whoever wrote the migration; a column or index a
// later migration adds to a distributed table is propagated to the shards by Citus itself.
// Distributing an existing table copies its rows to the shards, so an existing database can be
// moved onto a coordinator (pg_dump, restore, start the service) without loss.

// citusLockKey names the session advisory lock under which instances migrate and distribute one
// at a time on a Citus coordinator ("obsvcct" in ASCII); goose's own migration lock, the sweep's
// and this one are distinct keys, and every instance takes them in the same order.
const citusLockKey = 0x6f627376636374

// citusDistributionColumn is the column by which per-project tables are distributed.
const citusDistributionColumn = "project_id"

// citusReferenceTables are the reference tables, in the order they must be made so (a table
// holding a foreign key to another comes after it).
func citusReferenceTables() []string { return []string{"projects", "searches"} }

// hasCitus reports whether the citus extension is installed in the database db is connected to.
func hasCitus(ctx context.Context, db *sql.DB) (bool, error) {
	var ok bool
	err := db.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus')").Scan(&ok)
	return ok, err
}

// withCitusLock runs fn while holding the session advisory lock of Citus distribution on a
// connection of its own, waiting for another instance that holds it (bounded by ctx and by
// wait). The lock goes with the connection if the process dies.
func withCitusLock(ctx context.Context, db *sql.DB, wait time.Duration, fn func() error) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	deadline := time.Now().Add(wait)
	for {
		var got bool
		if err := conn.QueryRowContext(ctx, "SELECT pg_try_advisory_lock($1)", int64(citusLockKey)).Scan(&got); err != nil {
			return fmt.Errorf("citus: take the distribution lock: %w", err)
		}
		if got {
			break
		}
		if time.Now().After(deadline) {
			return errors.New("citus: another instance held the distribution lock for too long")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
	defer func() {
		// A failed unlock is harmless: closing the connection releases the lock too.
		_, _ = conn.ExecContext(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", int64(citusLockKey))
	}()
	return fn()
}

// citusTable is what distributeSchema decides for one table of the schema.
type citusTable struct {
	name      string
	column    string // the distribution column; "" for a reference table
	reference bool
}

// citusPlan lists what the schema should be on Citus, in the order the tables must be distributed:
// the reference tables first (per-project tables hold foreign keys to them), then logs, with which
// every other per-project table is co-located, then the rest. tables holds the names of the
// tables of the current schema and which of them have a project_id column.
func citusPlan(tables map[string]bool) ([]citusTable, []string) {
	var plan []citusTable
	var left []string
	for _, name := range citusReferenceTables() {
		if _, ok := tables[name]; ok {
			plan = append(plan, citusTable{name: name, reference: true})
		}
	}
	if tables["logs"] {
		plan = append(plan, citusTable{name: "logs", column: citusDistributionColumn})
	}
	if _, ok := tables["idempotency_keys"]; ok {
		plan = append(plan, citusTable{name: "idempotency_keys", column: "scope"})
	}
	for _, name := range slices.Sorted(maps.Keys(tables)) {
		switch {
		case slices.Contains(citusReferenceTables(), name) || name == "logs" || name == "idempotency_keys" || name == "goose_db_version":
		case tables[name]:
			plan = append(plan, citusTable{name: name, column: citusDistributionColumn})
		default:
			left = append(left, name)
		}
	}
	return plan, left
}

// distributeSchema makes the tables of the current schema reference or distributed tables as
// citusPlan says, skipping those that already are; a table that is distributed some other way is
// an error (the service would silently lose single-shard routing). It returns the tables it left
// on the coordinator (neither per-project nor known), for the caller to report.
func distributeSchema(ctx context.Context, db *sql.DB) (left []string, err error) {
	rows, err := db.QueryContext(ctx, `
SELECT c.relname,
       EXISTS (SELECT 1 FROM pg_attribute a
               WHERE a.attrelid = c.oid AND a.attname = $1 AND a.attnum > 0 AND NOT a.attisdropped)
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') AND NOT c.relispartition`, citusDistributionColumn)
	if err != nil {
		return nil, fmt.Errorf("citus: list tables: %w", err)
	}
	tables := map[string]bool{}
	for rows.Next() {
		var name string
		var perProject bool
		if err := rows.Scan(&name, &perProject); err != nil {
			_ = rows.Close()
			return nil, fmt.Errorf("citus: list tables: %w", err)
		}
		tables[name] = perProject
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, fmt.Errorf("citus: list tables: %w", err)
	}

	plan, left := citusPlan(tables)
	for _, t := range plan {
		var method, column sql.NullString
		var colocatedWithLogs bool
		// partmethod: 'h' hash-distributed, 'n' reference or Citus-managed local table (the
		// latter when a local table got a foreign key to a reference table); repmodel 't' marks a
		// reference table.
		err := db.QueryRowContext(ctx, `
SELECT CASE WHEN p.partmethod = 'n' AND p.repmodel = 't' THEN 'reference' ELSE p.partmethod::text END,
       column_to_column_name(p.logicalrelid, p.partkey),
       p.colocationid = (SELECT colocationid FROM pg_dist_partition WHERE logicalrelid = 'logs'::regclass)
FROM pg_dist_partition p WHERE p.logicalrelid = $1::regclass`, t.name).Scan(&method, &column, &colocatedWithLogs)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("citus: inspect %s: %w", t.name, err)
		}
		switch {
		case t.reference && method.String == "reference":
			continue
		case !t.reference && method.String == "h" && column.String == t.column && (t.name == "logs" || t.column != citusDistributionColumn || colocatedWithLogs):
			continue
		case method.String == "h" || method.String == "reference":
			return nil, fmt.Errorf("citus: table %s is distributed otherwise than the service needs (want %s)", t.name, t.describe())
		}
		var stmt string
		args := []any{t.name}
		switch {
		case t.reference:
			stmt = "SELECT create_reference_table($1)"
		case t.name == "logs" || t.column != citusDistributionColumn:
			stmt = "SELECT create_distributed_table($1, $2)"
			args = append(args, t.column)
		default:
			stmt = "SELECT create_distributed_table($1, $2, colocate_with => 'logs')"
			args = append(args, t.column)
		}
		if _, err := db.ExecContext(ctx, stmt, args...); err != nil {
			return nil, fmt.Errorf("citus: make %s %s: %w", t.name, t.describe(), err)
		}
	}
	return left, nil
}

func (t citusTable) describe() string {
	if t.reference {
		return "a reference table"
	}
	if t.column == citusDistributionColumn && t.name != "logs" {
		return "distributed by " + t.column + " and co-located with logs"
	}
	return "distributed by " + t.column
}
