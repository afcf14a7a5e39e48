package rest

// LogStatsParamsBy is the type of GET /logs/stats' by parameter. In 1.0.0 by was an enum and the
// generated client declared this type and its constants; by now names any field or attribute
// key, so the type is written here (openapi.yaml's x-go-type points to it) and programs written
// against 1.0.0 keep compiling unchanged.
type LogStatsParamsBy string

// The groupings 1.0.0 named. Any other field (user_id, trace_id, span_id) or attribute key
// (attributes.<key>, or the bare key) is LogStatsParamsBy("http.route").
const (
	LogStatsParamsByLevel   LogStatsParamsBy = "level"
	LogStatsParamsByNone    LogStatsParamsBy = "none"
	LogStatsParamsBySubject LogStatsParamsBy = "subject"
)

// Valid reports whether e is one of the groupings 1.0.0 named (level, subject, none). Since by
// takes any field or attribute key, a value it does not report may be valid too; the server
// says which are not (400 naming by).
func (e LogStatsParamsBy) Valid() bool {
	switch e {
	case LogStatsParamsByLevel, LogStatsParamsByNone, LogStatsParamsBySubject:
		return true
	}
	return false
}
