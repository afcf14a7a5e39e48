package sqlstore

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
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
	if !t.Attribute && isEntryField(t.Name) {
		return t.Name, nil
	}
	return s.eng.attributeText("attributes"), []any{t.Name}
}

// defaultFacetsMemory bounds what Facets holds while it counts in the service (Store.facetsMemory):
// the bytes of the distinct values it has met, each with facetsValueOverhead for its map entry.
// Past it the store groups instead (facetsGrouped), in its own memory, spilling to disk as it
// must.
const (
	defaultFacetsMemory = 16 << 20
	facetsValueOverhead = 64
)

// errFacetsInStore: the service's count gave up (too many distinct values, or attributes not in
// the stored form AttributeText reads); the store groups instead.
var errFacetsInStore = errors.New("facets: grouped by the store")

// valueCounts counts the distinct values of one field, in the order met (index finds a value in
// values), charging each new one to a budget of bytes shared by the fields of one question.
type valueCounts struct {
	index  map[string]int
	values []facetCount
}

func newValueCounts() *valueCounts { return &valueCounts{index: make(map[string]int, 64)} }

// add counts v; false when a new value would overdraw budget. The lookup converts v without
// copying it; only a new value is copied.
func (c *valueCounts) add(v []byte, budget *int64) bool {
	if at, ok := c.index[string(v)]; ok {
		c.values[at].n++
		return true
	}
	return c.insert(string(v), budget)
}

// addString is add for a value already held as a string.
func (c *valueCounts) addString(v string, budget *int64) bool {
	if at, ok := c.index[v]; ok {
		c.values[at].n++
		return true
	}
	return c.insert(v, budget)
}

func (c *valueCounts) insert(v string, budget *int64) bool {
	if *budget -= int64(len(v)) + facetsValueOverhead; *budget < 0 {
		return false
	}
	c.index[v] = len(c.values)
	c.values = append(c.values, facetCount{v, 1})
	return true
}

// top is the limit most common values, in facetBefore's order.
func (c *valueCounts) top(limit int) []facetCount {
	top := make([]facetCount, 0, limit+1)
	for _, v := range c.values {
		if len(top) >= limit && (len(top) == 0 || facetBefore(v, top[len(top)-1]) >= 0) {
			continue
		}
		at, _ := slices.BinarySearchFunc(top, v, facetBefore)
		top = slices.Insert(top, at, v)
		if len(top) > limit {
			top = top[:limit]
		}
	}
	return top
}

// Facets implements domain.FacetStore. The matching entries' fields are read in one statement
// and counted here (facetsCounted): taking one member from each entry's attributes is most of
// the work, and the stores' JSON operators parse each entry's whole object for it, where
// domain.AttributeText scans to the member. When the distinct values outgrow s.facetsMemory the
// store groups them itself (facetsGrouped); both give the same answer.
func (s *Store) Facets(ctx context.Context, q domain.FacetsQuery) ([]domain.Facet, error) {
	out, err := s.facetsCounted(ctx, q)
	if errors.Is(err, errFacetsInStore) {
		return s.facetsGrouped(ctx, q)
	}
	return out, err
}

// facetCount is one value of a field, as the answer orders it (raw: the attribute's JSON text,
// or the entry's own field's text), and how many entries have it.
type facetCount struct {
	raw string
	n   int64
}

// facetBefore orders a facet's values: the most common first, ties bytewise.
func facetBefore(a, b facetCount) int {
	return cmp.Or(cmp.Compare(b.n, a.n), strings.Compare(a.raw, b.raw))
}

// facetsCounted reads the fields asked for of every matching entry (eachMatching: an entry's own
// column, or its attributes once for every attribute asked for) and counts them.
func (s *Store) facetsCounted(ctx context.Context, q domain.FacetsQuery) ([]domain.Facet, error) {
	// Column colOf[i] of a row holds target i; attrCol is the attributes' column, or -1.
	var cols []string
	colOf := make([]int, len(q.Targets))
	attrCol := -1
	for i, t := range q.Targets {
		if t.Attribute || !isEntryField(t.Name) {
			if attrCol < 0 {
				attrCol = len(cols)
				cols = append(cols, "attributes")
			}
			colOf[i] = attrCol
			continue
		}
		colOf[i] = len(cols)
		cols = append(cols, t.Name)
	}
	// The attributes are read in place (RawBytes: valid until the next row); an entry's own
	// fields as strings, since a driver may hand an empty string on as a nil RawBytes, which
	// would read as a field the entry does not have.
	var attrs sql.RawBytes
	own := make([]sql.NullString, len(cols))
	dest := make([]any, len(cols))
	for c := range cols {
		dest[c] = &own[c]
		if c == attrCol {
			dest[c] = &attrs
		}
	}
	counts := make([]*valueCounts, len(q.Targets))
	for i := range counts {
		counts[i] = newValueCounts()
	}
	present := make([]int64, len(q.Targets))
	var total int64
	budget := s.facetsMemory
	err := s.eachMatching(ctx, "facets", q.LogFilter, q.Now, cols, dest, func() error {
		total++
		for i, t := range q.Targets {
			counted := true
			if c := colOf[i]; c == attrCol {
				v, has, ok := domain.AttributeText(attrs, t.Name)
				if !ok {
					return errFacetsInStore
				} else if !has {
					continue
				}
				counted = counts[i].add(v, &budget)
			} else if !own[c].Valid {
				continue
			} else {
				counted = counts[i].addString(own[c].String, &budget)
			}
			if !counted {
				return errFacetsInStore
			}
			present[i]++
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]domain.Facet, len(q.Targets))
	for i, t := range q.Targets {
		out[i] = facetOf(q.Fields[i], t, counts[i].top(q.Limit), present[i], total)
	}
	return out, nil
}

// eachMatching reads cols of every entry f matches (f.Start and f.End are required) into dest
// and calls row for each, in one statement and so one snapshot on both engines with the
// project's retention at now (statsCut). When no entry matches it asks whether the project
// exists (projectExists), as an empty listing does: an entry read says so already. Both
// statements name the project, so on Citus each is one router query. what names the question
// in errors; an error of row ends the read and is returned as it is.
func (s *Store) eachMatching(ctx context.Context, what string, f domain.LogFilter, now int64, cols []string, dest []any, row func() error) error {
	start := *f.Start
	f.Start = nil // lo, the later of start and the retention, is added below
	w, wargs, err := s.plannedWhere(ctx, f)
	if err != nil {
		return s.translate(what+": plan", err)
	}
	query := statsCut + " SELECT " + strings.Join(cols, ", ") + " FROM logs" + w + " AND time >= (SELECT lo FROM cut)"
	rows, err := s.r.QueryContext(ctx, s.bind(query), append(statsCutArgs(start, now, f.ProjectID), wargs...)...)
	if err != nil {
		return s.translate(what, err)
	}
	defer rows.Close()
	read := false
	for rows.Next() {
		read = true
		if err := rows.Scan(dest...); err != nil {
			return s.translate(what, err)
		}
		if err := row(); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return s.translate(what, err)
	}
	if !read {
		var one int
		if err := s.r.GetContext(ctx, &one, s.bind(projectExists), f.ProjectID); err != nil {
			return s.translate(what+": project", err)
		}
	}
	return nil
}

// isEntryField reports whether name is one of the entry's own fields, which a facet reads from
// its column.
func isEntryField(name string) bool {
	switch name {
	case domain.FieldLevel, domain.FieldMessage, domain.FieldSubject, domain.FieldUserID, domain.FieldTraceID, domain.FieldSpanID:
		return true
	}
	return false
}

// facetOf is the answer for field (t, as named) from its most common values in order, how many
// matching entries have the field, and how many match.
func facetOf(field string, t domain.QueryField, top []facetCount, present, total int64) domain.Facet {
	fc := domain.Facet{Field: field, Values: make([]domain.FacetValue, len(top)), Missing: total - present}
	listed := int64(0)
	for j, v := range top {
		text := v.raw
		if !t.Attribute {
			text = jsonString(v.raw)
		}
		fc.Values[j] = domain.FacetValue{Value: text, Count: v.n}
		listed += v.n
	}
	fc.Other = present - listed
	return fc
}

// facetsGrouped answers Facets in one statement that groups in the store, its own snapshot on
// both engines: the project's retention (statsCut), the matching entries' fields read once (the
// CTE m, which both engines materialise, being used more than once), then per field its q.Limit
// most common values, how many entries have the field, and how many entries match. Every part
// names the project (m through where, cut by its id), so on Citus it is one router query.
func (s *Store) facetsGrouped(ctx context.Context, q domain.FacetsQuery) ([]domain.Facet, error) {
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
	values := make([][]facetCount, len(q.Targets))
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
			values[fi] = append(values[fi], facetCount{v.String, n})
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
		// The statement's order, kept whatever order UNION ALL hands the rows on in.
		slices.SortFunc(values[i], facetBefore)
		out[i] = facetOf(q.Fields[i], t, values[i], present[i], total)
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

// Fields implements domain.FacetStore as Facets does: the matching entries' attributes are read
// and their keys counted here (fieldsCounted), with domain.AttributeKeys, unless the distinct
// keys outgrow s.facetsMemory or attributes are not in the stored form; then the store counts
// them (fieldsGrouped). Both give the same answer.
func (s *Store) Fields(ctx context.Context, q domain.FieldsQuery) ([]domain.FieldCount, error) {
	out, err := s.fieldsCounted(ctx, q)
	if errors.Is(err, errFacetsInStore) {
		return s.fieldsGrouped(ctx, q)
	}
	return out, err
}

// fieldsCounted reads the attributes of every matching entry (eachMatching) and counts their
// keys.
func (s *Store) fieldsCounted(ctx context.Context, q domain.FieldsQuery) ([]domain.FieldCount, error) {
	var attrs sql.RawBytes
	keys := newValueCounts()
	budget := s.facetsMemory
	within := true
	count := func(k []byte) { within = within && keys.add(k, &budget) }
	err := s.eachMatching(ctx, "fields", q.LogFilter, q.Now, []string{"attributes"}, []any{&attrs}, func() error {
		if !domain.AttributeKeys(attrs, count) || !within {
			return errFacetsInStore
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	top := keys.top(q.Limit)
	out := make([]domain.FieldCount, len(top)) // an answer of no keys is [], not null
	for i, k := range top {
		out[i] = domain.FieldCount{Field: k.raw, Count: k.n}
	}
	return out, nil
}

// fieldBefore orders a fields answer: the most common first, ties bytewise.
func fieldBefore(a, b domain.FieldCount) int {
	return cmp.Or(cmp.Compare(b.Count, a.Count), strings.Compare(a.Field, b.Field))
}

// fieldsGrouped answers Fields in one statement that counts in the store, its own snapshot on
// both engines: the project's retention (statsCut), then the keys of the matching entries'
// attributes counted, the q.Limit most common. The matching entries are read in a subquery of
// their own, so that where's columns are the entry's alone.
func (s *Store) fieldsGrouped(ctx context.Context, q domain.FieldsQuery) ([]domain.FieldCount, error) {
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
	slices.SortFunc(out, fieldBefore)
	return out, nil
}
