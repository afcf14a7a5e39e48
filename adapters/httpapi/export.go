package httpapi

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"example.com/obsvc/api/rest"
	"example.com/obsvc/domain"
)

// ExportLogs implements rest.StrictServerInterface. GET /logs/export is served through the
// generated strict server, unlike the live tail: an export is a listing without a page limit,
// and the strict response of a listing already streams (its Visit method is handed the
// ResponseWriter, see logsPage), so the route keeps the validator in front of it, which
// refuses a bad parameter (a format that is neither ndjson nor csv) before any byte of the
// download, and the generated parameter binding. The response is exportStream, not one of the
// generated ones, which would copy one io.Reader and could neither renew the write deadline
// per part nor stop a failed stream short.
func (s *server) ExportLogs(ctx context.Context, req rest.ExportLogsRequestObject) (rest.ExportLogsResponseObject, error) {
	p := req.Params
	format := rest.Ndjson
	if p.Format != nil {
		format = *p.Format
	}
	if !format.Valid() {
		return nil, domain.ParamError("format", "must be ndjson or csv")
	}
	return exportStream{
		ctx: ctx, svc: s.svc, format: format, stall: s.stall, log: s.log, buffers: s.buffers,
		filter:   filter(p.ProjectId, p.UserId, p.LogLevel, p.Subject, p.Q, p.Query, p.TraceId, p.StartTime, p.EndTime),
		pageSize: s.exportPage, pageTimeout: s.exportTimeout,
	}, nil
}

// exportStream is the 200 response of ExportLogs: the store's pages, one after another, each
// entry written as it is read and each page flushed, through the listing's stall-bounded writer.
type exportStream struct {
	ctx         context.Context
	svc         *domain.Service
	filter      domain.LogFilter
	format      rest.ExportLogsParamsFormat
	pageSize    int
	pageTimeout time.Duration
	stall       time.Duration
	log         *slog.Logger
	buffers     *sync.Pool
}

func (x exportStream) VisitExportLogsResponse(w http.ResponseWriter) error {
	var (
		bw      *bufio.Writer
		release func()
		rows    exportWriter
	)
	begin := func() {
		h := w.Header()
		ext := "ndjson"
		if x.format == rest.Csv {
			ext = "csv"
			h.Set("Content-Type", "text/csv; charset=utf-8")
		} else {
			h.Set("Content-Type", "application/x-ndjson")
		}
		// The project id is one the service has found valid (a UUID) by now: safe in a header.
		h.Set("Content-Disposition", `attachment; filename="logs-`+x.filter.ProjectID+`.`+ext+`"`)
		w.WriteHeader(http.StatusOK)
		bw, release = streamWriter(x.buffers, w, x.stall)
		rows = newExportWriter(x.format, bw)
	}
	defer func() {
		if release != nil {
			release()
		}
	}()
	err := x.svc.ExportLogs(x.ctx, x.filter, x.pageSize, x.pageTimeout, func(page domain.Page) error {
		if bw == nil {
			begin()
			if err := rows.header(); err != nil {
				return err
			}
		}
		for e, err := range page.Entries {
			if err != nil {
				return err
			}
			if err := rows.entry(e); err != nil {
				return err
			}
		}
		if err := rows.flush(); err != nil {
			return err
		}
		return bw.Flush() // each page goes out whole before the next is read
	})
	// A problem document appended to a CSV would read as data: cut short, as a listing is.
	return endStream(x.ctx, x.log, "export", err, bw != nil)
}

// exportWriter writes the rows of one export format.
type exportWriter interface {
	header() error
	entry(domain.LogEntry) error
	// flush hands what the writer holds to the buffer below it.
	flush() error
}

func newExportWriter(format rest.ExportLogsParamsFormat, bw *bufio.Writer) exportWriter {
	if format == rest.Csv {
		// Records end in LF, not RFC 4180's CRLF: with UseCRLF, encoding/csv writes each LF
		// inside a field as CRLF and drops each lone CR, and an export must keep every message
		// as it is. RFC 4180 readers take LF-terminated records.
		return &csvRows{w: csv.NewWriter(bw), cells: make([]string, csvColumns)}
	}
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false) // as a listing encodes its entries
	return &ndjsonRows{enc: enc}
}

// ndjsonRows writes each entry as GET /logs renders it, one per line (the encoder ends each
// value with a newline).
type ndjsonRows struct {
	enc *json.Encoder
	// one is the entry being encoded, reused (see logsPage).
	one rest.LogEntry
}

func (n *ndjsonRows) header() error { return nil }
func (n *ndjsonRows) flush() error  { return nil }

func (n *ndjsonRows) entry(e domain.LogEntry) error {
	n.one = toEntry(e)
	return n.enc.Encode(&n.one)
}

// csvRows writes the header row, then one row per entry.
type csvRows struct {
	w     *csv.Writer
	cells []string
}

// csvColumns is how many cells a row of a CSV export holds: header writes their names.
const csvColumns = 8

func (c *csvRows) header() error {
	return c.w.Write([]string{"time", "level", "subject", "user_id", "trace_id", "span_id", "message", "attributes"})
}

func (c *csvRows) entry(e domain.LogEntry) error {
	c.cells[0] = strconv.FormatInt(e.Time, 10) // Unix ms, as GET /logs renders time
	c.cells[1] = e.Level
	c.cells[2] = orEmpty(e.Subject)
	c.cells[3] = orEmpty(e.UserID)
	c.cells[4] = orEmpty(e.TraceID)
	c.cells[5] = orEmpty(e.SpanID)
	c.cells[6] = e.Message
	c.cells[7] = string(e.Attributes) // canonical compact JSON as stored; empty when none
	for i, cell := range c.cells {
		c.cells[i] = formulaSafe(cell)
	}
	return c.w.Write(c.cells)
}

func (c *csvRows) flush() error {
	c.w.Flush()
	return c.w.Error()
}

func orEmpty(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// formulaSafe is cell as a CSV export writes it: with a "'" before it when it begins with a
// character that makes a spreadsheet read the cell as a formula (=, +, -, @) or that some
// spreadsheets skip before one (tab, carriage return), after OWASP's advice on CSV injection.
func formulaSafe(cell string) string {
	if cell == "" {
		return cell
	}
	switch cell[0] {
	case '=', '+', '-', '@', '\t', '\r':
		return "'" + cell
	}
	return cell
}
