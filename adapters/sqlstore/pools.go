package sqlstore

import "database/sql"

// Pools names the store's connection pools, for pool metrics: "writer" and "reader" on SQLite,
// "main" on PostgreSQL.
func (s *Store) Pools() map[string]*sql.DB {
	if s.r == s.w {
		return map[string]*sql.DB{"main": s.w.DB}
	}
	return map[string]*sql.DB{"writer": s.w.DB, "reader": s.r.DB}
}
