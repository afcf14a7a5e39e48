package sqlstore

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"example.com/obsvc/domain"
)

var _ domain.FacetStore = (*Store)(nil)

// The kinds of row a facets statement answers with (its second column).
const (
	facetValue   = 0 // one value of field fi and how many entries have it
	facetPresent = 1 // how many entries have field fi at all
	facetTotal   = 2 // how many entries match
	facetFound   = 3 // the project exists
)

// facetColumn renders what the facets statement groups field t by, with its arguments: the
// entry's column, or the attribute's value as JSON text exactly as stored (engine.attributeText).
func (s *Store) facetColumn(t domain.QueryField) (string, []any) {
	if !t.Attribute {
		switch t.Name {
		case domain.FieldLevel, domain.FieldMessage, domain.FieldSubject, domain.FieldUserID, domain.FieldTraceID, domain.FieldSpanID:
			return t.Name, nil
		}
	}
	return s.eng.attributeText("attributes"), []any{t.Name}
}

// Facets implements domain.FacetStore in one statement, its own snapshot on both engines: the
// project's retention (statsCut), the matching entries' fields read once (the CTE m, which both
// engines materialise, being used more than once), then per field its q.Limit most common
// values, how many entries have the field, and how many entries match. Every part names the
// project (m through where, cut by its id), so on Citus it is one router query.
func (s *Store) Facets(ctx context.Context, q domain.FacetsQuery) ([]domain.Facet, error) {
	start, end := *q.Start, *q.End
	args := statsCutArgs(start, q.Now, q.ProjectID)
	cols := make([]string, len(q.Targets))
	for i, t := range q.Targets {
		col, colArgs := s.facetColumn(t)
		cols[i] = col + " AS f" + strconv.Itoa(i)
		args = append(args, colArgs...)
	}
	f := q.LogFilter
	f.Start, f.End = nil, &end // lo, the later of start and the retention, is added below
	w, wargs, err := s.plannedWhere(ctx, f)
	if err != nil {
		return nil, s.translate("facets: plan", err)
	}
	args = append(args, wargs...)
	var b strings.Builder
	b.WriteString(statsCut)
	b.WriteString(", m AS (SELECT ")
	b.WriteString(strings.Join(cols, ", "))
	b.WriteString(" FROM logs" + w + " AND time >= (SELECT lo FROM cut))")
	fmt.Fprintf(&b, " SELECT -1 AS fi, %d AS kind, CAST(NULL AS TEXT) AS v, CAST(0 AS BIGINT) AS n FROM cut", facetFound)
	fmt.Fprintf(&b, " UNION ALL SELECT -1, %d, CAST(NULL AS TEXT), count(*) FROM m", facetTotal)
	for i := range q.Targets {
		c := "f" + strconv.Itoa(i)
		fmt.Fprintf(&b, " UNION ALL SELECT %d, %d, CAST(NULL AS TEXT), count(%s) FROM m", i, facetPresent, c)
		fmt.Fprintf(&b, " UNION ALL SELECT %d, %d, v, n FROM (SELECT %s AS v, count(*) AS n FROM m WHERE %s IS NOT NULL GROUP BY %s ORDER BY n DESC, %s%s LIMIT ?) t%d",
			i, facetValue, c, c, c, c, s.eng.bytewise(), i)
		args = append(args, q.Limit)
	}
	rows, err := s.r.QueryContext(ctx, s.bind(b.String()), args...)
	if err != nil {
		return nil, s.translate("facets", err)
	}
	defer rows.Close()
	type value struct {
		raw string
		n   int64
	}
	values := make([][]value, len(q.Targets))
	present := make([]int64, len(q.Targets))
	var total int64
	found := false
	for rows.Next() {
		var fi, kind, n int64
		var v sql.NullString
		if err := rows.Scan(&fi, &kind, &v, &n); err != nil {
			return nil, s.translate("facets", err)
		}
		switch {
		case kind == facetFound:
			found = true
		case kind == facetTotal:
			total = n
		case fi < 0 || fi >= int64(len(q.Targets)):
			return nil, fmt.Errorf("facets: field %d out of range", fi)
		case kind == facetPresent:
			present[fi] = n
		case kind == facetValue && v.Valid:
			values[fi] = append(values[fi], value{v.String, n})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, s.translate("facets", err)
	}
	if !found {
		return nil, s.translate("facets: project", sql.ErrNoRows)
	}
	out := make([]domain.Facet, len(q.Targets))
	for i, t := range q.Targets {
		vs := values[i]
		// The statement's order, kept whatever order UNION ALL hands the rows on in.
		slices.SortFunc(vs, func(a, b value) int { return cmp.Or(cmp.Compare(b.n, a.n), strings.Compare(a.raw, b.raw)) })
		fc := domain.Facet{Field: q.Fields[i], Values: make([]domain.FacetValue, len(vs)), Missing: total - present[i]}
		listed := int64(0)
		for j, v := range vs {
			text := v.raw
			if !t.Attribute {
				text = jsonString(v.raw)
			}
			fc.Values[j] = domain.FacetValue{Value: text, Count: v.n}
			listed += v.n
		}
		fc.Other = present[i] - listed
		out[i] = fc
	}
	return out, nil
}

// jsonString is s as a JSON string, as the service writes strings (no HTML escaping).
func jsonString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

// Fields implements domain.FacetStore in one statement, its own snapshot on both engines: the
// project's retention (statsCut), then the keys of the matching entries' attributes counted,
// the q.Limit most common. The matching entries are read in a subquery of their own, so that
// where's columns are the entry's alone.
func (s *Store) Fields(ctx context.Context, q domain.FieldsQuery) ([]domain.FieldCount, error) {
	start, end := *q.Start, *q.End
	f := q.LogFilter
	f.Start, f.End = nil, &end
	w, wargs, err := s.plannedWhere(ctx, f)
	if err != nil {
		return nil, s.translate("fields: plan", err)
	}
	args := append(statsCutArgs(start, q.Now, q.ProjectID), wargs...)
	args = append(args, q.Limit)
	table, key := s.eng.attributeKeys("e")
	query := statsCut + " SELECT k, n FROM (SELECT " + key + " AS k, count(*) AS n FROM (SELECT attributes FROM logs" + w +
		" AND time >= (SELECT lo FROM cut)) e, " + table + " GROUP BY " + key + " ORDER BY n DESC, " + key + s.eng.bytewise() + " LIMIT ?) t" +
		" UNION ALL SELECT CAST(NULL AS TEXT), CAST(-1 AS BIGINT) FROM cut"
	rows, err := s.r.QueryContext(ctx, s.bind(query), args...)
	if err != nil {
		return nil, s.translate("fields", err)
	}
	defer rows.Close()
	out := []domain.FieldCount{}
	found := false
	for rows.Next() {
		var k sql.NullString
		var n int64
		if err := rows.Scan(&k, &n); err != nil {
			return nil, s.translate("fields", err)
		}
		if !k.Valid {
			found = true
			continue
		}
		out = append(out, domain.FieldCount{Field: k.String, Count: n})
	}
	if err := rows.Err(); err != nil {
		return nil, s.translate("fields", err)
	}
	if !found {
		return nil, s.translate("fields: project", sql.ErrNoRows)
	}
	slices.SortFunc(out, func(a, b domain.FieldCount) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), strings.Compare(a.Field, b.Field))
	})
	return out, nil
}
