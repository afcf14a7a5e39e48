// Package esbulk serves the Elasticsearch bulk API (POST /_bulk and POST /{index}/_bulk), the
// way most log shippers send logs (rsyslog's omelasticsearch, syslog-ng's elasticsearch-http(),
// Filebeat, Logstash, Vector, Fluentd and Fluent Bit, the official clients), and the few
// discovery calls those shippers make before their first bulk request (discovery.go).
//
// It is a hand-written handler, not part of the generated strict server: a bulk body is NDJSON
// in action/document pairs (any content type, identity or gzip, capped after decompression), and
// its answer is one status per item, 201 for each item stored and 400, 403, 404 or 429 for each
// refused, which no operation of the strict server can express. openapi.yaml still describes
// every route.
//
// What a document becomes is mapping.go's; which entries are refused, the domain decides
// (Service.CreateLogsPartial, asked for every record's problem). The index an item names, in
// its action line or the URL, is the project id; a project key implies its own project when no
// index is named.
package esbulk

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"example.com/obsvc/adapters/internal/httpbody"
	"example.com/obsvc/domain"
)

// The bulk routes.
const (
	BulkPath         = "/_bulk"
	IndexBulkPattern = "/{index}/_bulk"
)

// IsRoute reports the requests this package answers (the bulk routes and the discovery calls),
// whose refusals, by the edge too, are in Elasticsearch's error shape and carry its product
// header, and which accept the credentials shippers send (Basic, ApiKey, Bearer).
func IsRoute(r *http.Request) bool {
	p := r.URL.Path
	if p == "/" {
		return r.Method == http.MethodGet || r.Method == http.MethodHead
	}
	if p == BulkPath || strings.HasSuffix(p, BulkPath) && strings.Count(p, "/") == 2 {
		return true
	}
	for _, d := range discoveryPaths {
		if p == d || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

// DefaultMaxBodyBytes caps a bulk body after decompression, 8 MiB: above the 5 MB a request of
// the official clients' bulk helpers flushes at (esutil.BulkIndexer, helpers.bulk) and
// Filebeat's and Vector's defaults, with room for a line of the largest message.
const DefaultMaxBodyBytes = 8 << 20

// DefaultMaxDecodes is how many bulk requests are read, decoded and stored at once; past it a
// request is answered 429, which every shipper retries.
const DefaultMaxDecodes = 4

// Options configure the handler.
type Options struct {
	// MaxBodyBytes caps a body after decompression (DefaultMaxBodyBytes when zero).
	MaxBodyBytes int64
	// MaxDecodes caps the bulk requests in hand at once (DefaultMaxDecodes when zero; below
	// zero, no cap).
	MaxDecodes int
	Logger     *slog.Logger
	// OnBulk, when set, is told of each bulk request answered: how many items it stored (not
	// counting those replayed from an earlier identical request) and how many it refused.
	OnBulk func(stored, refused int)
}

// Handler serves the bulk routes and the discovery calls.
type Handler struct {
	svc   *domain.Service
	opts  Options
	slots chan struct{} // nil: no cap
}

// NewHandler returns the handler of the bulk routes.
func NewHandler(svc *domain.Service, opts Options) *Handler {
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.MaxDecodes == 0 {
		opts.MaxDecodes = DefaultMaxDecodes
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	h := &Handler{svc: svc, opts: opts}
	if opts.MaxDecodes > 0 {
		h.slots = make(chan struct{}, opts.MaxDecodes)
	}
	return h
}

// Register mounts the bulk routes and the discovery calls on mux, each wrapped by wrap (the
// query-string check of the other hand-written routes, say; nil for none).
func (h *Handler) Register(mux *http.ServeMux, wrap func(http.Handler) http.Handler) {
	if wrap == nil {
		wrap = func(h http.Handler) http.Handler { return h }
	}
	bulk := wrap(http.HandlerFunc(h.serveBulk))
	mux.Handle("POST "+BulkPath, bulk)
	mux.Handle("POST "+IndexBulkPattern, bulk)
	h.registerDiscovery(mux, wrap)
}

// item is one action of a bulk body and, for index and create, its document.
type item struct {
	action string // index, create, delete or update
	index  string // the action's _index, else the URL's
	doc    []byte // nil when missing
	// status and err are set once the item is answered; 0 while it may still be stored.
	status int
	err    *itemError
	id     string
	record int // its index among its group's records, -1 when not one
}

type itemError struct {
	Type   string `json:"type"`
	Reason string `json:"reason"`
}

func (it *item) refuse(status int, typ, reason string) {
	it.status, it.err = status, &itemError{Type: typ, Reason: reason}
}

func (h *Handler) serveBulk(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	w.Header().Set(ProductHeader, ProductName)
	if h.slots != nil {
		select {
		case h.slots <- struct{}{}:
			defer func() { <-h.slots }()
		default:
			WriteError(w, r, domain.Errorf(domain.KindRateLimited, "the server is handling %d bulk requests, its limit (ES_MAX_DECODES); retry shortly", cap(h.slots)), h.opts.Logger)
			return
		}
	}
	body, err := h.readBody(w, r)
	if err != nil {
		WriteError(w, r, err, h.opts.Logger)
		return
	}
	items, err := parse(body, r.PathValue("index"))
	if err != nil {
		WriteError(w, r, err, h.opts.Logger)
		return
	}
	stored, err := h.store(r, items, body)
	if err != nil {
		WriteError(w, r, err, h.opts.Logger)
		return
	}
	refused := 0
	for _, it := range items {
		if it.status >= 300 {
			refused++
		}
	}
	if h.opts.OnBulk != nil {
		h.opts.OnBulk(stored, refused)
	}
	writeBulk(w, time.Since(start), items, refused > 0)
}

// group is the items of one bulk request bound for one index ("" for none named), stored by
// one call of CreateLogsPartial per chunk of at most Limits.MaxBatchEntries records.
type group struct {
	index string
	items []*item
}

// store maps every document still unanswered, groups the items by index and stores each group,
// setting each item's status. It returns how many records it stored anew; an error is a fault
// of the whole request (an internal one: every per-item failure is the item's).
func (h *Handler) store(r *http.Request, items []*item, body []byte) (int, error) {
	limits := h.svc.Limits()
	// A project key's items that name no index are its project's, and answered as such.
	if who, ok := domain.PrincipalFrom(r.Context()); ok && !who.Admin && who.ProjectID != "" {
		for _, it := range items {
			if it.index == "" {
				it.index = who.ProjectID
			}
		}
	}
	// Items are grouped by index as sent, and each group stored in chunks of at most
	// MaxBatchEntries items, each chunk's documents mapped just before it is stored: a body of
	// many small items holds one chunk's entries at a time, and a resend is chunked the same way.
	var groups []*group
	byIndex := map[string]*group{}
	for _, it := range items {
		if it.status != 0 {
			continue
		}
		g := byIndex[it.index]
		if g == nil {
			g = &group{index: it.index}
			byIndex[it.index] = g
			groups = append(groups, g)
		}
		g.items = append(g.items, it)
	}
	sum := sha256.Sum256(body)
	digest := hex.EncodeToString(sum[:])
	stored := 0
	m := newMapper(limits)
	for _, g := range groups {
		for chunk, items := range chunks(g.items, limits.MaxBatchEntries) {
			records := make([]domain.LogInput, 0, len(items))
			part := make([]*item, 0, len(items)) // the items of records, in order
			for _, it := range items {
				in, problem := m.toInput(it.doc)
				if problem != "" {
					it.refuse(http.StatusBadRequest, "document_parsing_exception", problem)
					continue
				}
				records = append(records, in)
				part = append(part, it)
			}
			if len(records) == 0 {
				continue
			}
			// The fingerprint names the body, the index and the chunk: two groups of one request
			// that resolve to the same project are two requests, never one's replay.
			fp := sha256.Sum256([]byte(digest + "\x00" + g.index + "\x00" + strconv.Itoa(chunk)))
			res, err := h.svc.CreateLogsPartial(r.Context(), domain.PartialBatch{
				ProjectID:    g.index,
				Records:      records,
				Fingerprint:  "es-bulk-sha256:" + hex.EncodeToString(fp[:]),
				EveryProblem: true,
			})
			if err != nil {
				if domain.KindOf(err) == domain.KindInternal {
					return 0, err
				}
				status, typ := itemStatus(domain.KindOf(err))
				reason := shown(err)
				for _, it := range part {
					it.refuse(status, typ, reason)
				}
				continue
			}
			for _, p := range res.Problems {
				j, err := strconv.Atoi(p.Path[0])
				if err != nil || j < 0 || j >= len(part) {
					continue
				}
				field := ""
				if len(p.Path) > 1 {
					field = p.Path[1]
				}
				part[j].refuse(http.StatusBadRequest, "document_parsing_exception", fieldName(field)+" "+p.Detail)
			}
			if !res.Replayed {
				stored += res.Stored
			}
			for j, it := range part {
				if it.status != 0 {
					continue
				}
				it.status = http.StatusCreated
				if res.IDs != nil {
					it.id = res.IDs[j]
				}
			}
		}
	}
	return stored, nil
}

// chunks splits items into runs of at most n.
func chunks(items []*item, n int) func(yield func(int, []*item) bool) {
	return func(yield func(int, []*item) bool) {
		for i := 0; len(items) > 0; i++ {
			k := min(n, len(items))
			if !yield(i, items[:k]) {
				return
			}
			items = items[k:]
		}
	}
}

// fieldName names an entry's field in the words of a document: the fields it is read from.
func fieldName(field string) string {
	switch field {
	case "message":
		return "the message (message, msg or log)"
	case "level":
		return "the level (level, log.level or severity)"
	case "time":
		return "the time (@timestamp, timestamp or time)"
	case "subject":
		return "the subject (service.name or host.name)"
	case "user_id":
		return "user.id"
	case "trace_id":
		return "the trace id (trace.id or trace_id)"
	case "span_id":
		return "the span id (span.id or span_id)"
	case "attributes":
		return "the other fields (the attributes)"
	case "":
		return "the document"
	}
	return field
}

// shown is what a client is told of a domain error: its message without the cause.
func shown(err error) string {
	var de *domain.Error
	if errors.As(err, &de) {
		s := *de
		s.Err = nil
		return s.Error()
	}
	return "internal error"
}

// parse splits a bulk body into its items. A line that is not an action where one is due makes
// the whole body invalid (as in Elasticsearch: nothing is stored); an index or create action
// whose document is missing is refused on its own.
func parse(body []byte, urlIndex string) ([]*item, error) {
	var items []*item
	lines := splitLines(body)
	// A shipper writes the same action line before every document (its index, nothing else):
	// an action line equal to the one before is that one's action, read once. parseAction
	// depends on the line's bytes alone.
	var last []byte
	var lastAction action
	for i := 0; i < len(lines); i++ {
		ln := lines[i]
		if len(bytes.TrimSpace(ln.text)) == 0 {
			continue
		}
		a, err := lastAction, error(nil)
		if last == nil || !bytes.Equal(ln.text, last) {
			a, err = parseAction(ln.text)
			if err == nil {
				last, lastAction = ln.text, a
			}
		}
		if err != nil {
			return nil, &malformedError{msg: fmt.Sprintf("malformed action/metadata line [%d]: %v", ln.no, err)}
		}
		it := &item{action: a.name, index: a.index, record: -1}
		if it.index == "" {
			it.index = urlIndex
		}
		items = append(items, it)
		switch a.name {
		case "delete":
			it.refuse(http.StatusBadRequest, "illegal_argument_exception", "delete is not supported: log entries are immutable (delete them through DELETE /logs)")
			continue
		case "update":
			if i+1 < len(lines) {
				i++ // its partial document
			}
			it.refuse(http.StatusBadRequest, "illegal_argument_exception", "update is not supported: log entries are immutable; send index or create")
			continue
		}
		// index or create: the next non-blank line is the document, unless it is an action.
		j := i + 1
		for j < len(lines) && len(bytes.TrimSpace(lines[j].text)) == 0 {
			j++
		}
		if j >= len(lines) || looksLikeAction(lines[j].text) {
			it.refuse(http.StatusBadRequest, "action_request_validation_exception", fmt.Sprintf("the %s action of line [%d] has no document line after it", a.name, ln.no))
			i = j - 1
			continue
		}
		it.doc = lines[j].text
		i = j
	}
	if len(items) == 0 {
		return nil, domain.Errorf(domain.KindInvalid, "the request body holds no action: a bulk body is NDJSON, an action line then, for index and create, a document line")
	}
	return items, nil
}

type line struct {
	no   int // 1-based
	text []byte
}

// splitLines splits body at '\n', dropping a '\r' before it.
func splitLines(body []byte) []line {
	var out []line
	no := 0
	for len(body) > 0 {
		no++
		i := bytes.IndexByte(body, '\n')
		var l []byte
		if i < 0 {
			l, body = body, nil
		} else {
			l, body = body[:i], body[i+1:]
		}
		out = append(out, line{no: no, text: bytes.TrimSuffix(l, []byte("\r"))})
	}
	return out
}

// readBody reads the whole body, decompressed, refusing more than MaxBodyBytes of it before
// reading further: a small gzip body that inflates without bound costs at most the cap.
func (h *Handler) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	return httpbody.Read(w, r, h.opts.MaxBodyBytes, "ES_MAX_BODY_BYTES: send smaller bulk requests")
}
