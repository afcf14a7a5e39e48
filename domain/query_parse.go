package domain

// ParseQuery parses text by the grammar of the query language (see Query) within l. An empty
// or all-space text is the zero Query. A text outside the grammar or the limits is a
// *QuerySyntaxError.
func ParseQuery(text string, l QueryLimits) (Query, error) {
	return Query{}, &QuerySyntaxError{Pos: 1, Msg: "the query language is not implemented yet"}
}

// Matches reports whether e matches q by the semantics written on each node type: the Go twin
// of every store's rendering of q.
func (q Query) Matches(e LogEntry) bool {
	return q.Root == nil
}
