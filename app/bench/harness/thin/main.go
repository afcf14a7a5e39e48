// Command thin is the baseline of the outside harness's read figures: the thinnest handler of
// GET /logs one could write with net/http, database/sql and encoding/json, and nothing else. No
// middleware, no validation beyond parsing, no domain: the service's listing SQL (the text of
// sqlstore's listQuery, prepared once per shape), its rows streamed as the service's JSON, and the
// same Link header, so a client sees the same bytes from both.
//
//	thin -addr 127.0.0.1:8082 -database-url postgres://…
package main

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	_ "github.com/lib/pq"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8082", "`host:port` to listen on")
	dbURL := flag.String("database-url", "", "PostgreSQL `URL`")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *addr, *dbURL); err != nil {
		fmt.Fprintln(os.Stderr, "thin:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, addr, dbURL string) error {
	db, err := sql.Open("postgres", dbURL)
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(16) // the service's pool
	db.SetMaxIdleConns(16)
	if err := db.PingContext(ctx); err != nil {
		return err
	}
	h := &handler{db: db}
	mux := http.NewServeMux()
	mux.Handle("GET /logs", h)
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

type handler struct {
	db    *sql.DB
	stmts sync.Map // query text → *sql.Stmt
}

// entry has the fields, tags and order of the service's rest.LogEntry.
type entry struct {
	ID        string  `json:"id"`
	Level     string  `json:"level"`
	Message   string  `json:"message"`
	ProjectID string  `json:"project_id"`
	Subject   *string `json:"subject,omitempty"`
	Time      int64   `json:"time"`
	UserID    *string `json:"user_id,omitempty"`
}

// cursor is the service's cursor on the wire: base64url of this JSON.
type cursor struct {
	T int64  `json:"t"`
	I string `json:"i"`
	D bool   `json:"d,omitempty"`
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	query, args, limit, desc, err := listQuery(q)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	stmt, err := h.prepare(r.Context(), query)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	rows, err := stmt.QueryContext(r.Context(), args...)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	defer rows.Close()

	var e entry
	var subject, userID, lastID sql.NullString
	var found int
	var lastTime sql.NullInt64
	scan := func() error {
		e.Subject, e.UserID = nil, nil
		if err := rows.Scan(&e.ID, &e.ProjectID, &e.Time, &e.Level, &e.Message, &subject, &userID, &found, &lastTime, &lastID); err != nil {
			return err
		}
		if subject.Valid {
			e.Subject = &subject.String
		}
		if userID.Valid {
			e.UserID = &userID.String
		}
		return nil
	}
	has := rows.Next()
	if has {
		if err := scan(); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	if has && found > limit && lastTime.Valid && lastID.Valid {
		c, _ := json.Marshal(cursor{T: lastTime.Int64, I: lastID.String, D: desc})
		q.Del("cursor")
		link := url.URL{Path: r.URL.Path, RawQuery: q.Encode()}
		if link.RawQuery != "" {
			link.RawQuery += "&"
		}
		link.RawQuery += "cursor=" + url.QueryEscape(base64.RawURLEncoding.EncodeToString(c))
		w.Header().Set("Link", "<"+link.String()+`>; rel="next"`)
	}
	bw := bufio.NewWriterSize(w, 32<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	_ = bw.WriteByte('[')
	for n := 1; has; n++ {
		if n > 1 {
			_ = bw.WriteByte(',')
		}
		if err := enc.Encode(&e); err != nil || n == limit || !rows.Next() {
			break
		}
		if err := scan(); err != nil {
			panic(http.ErrAbortHandler) // the body is partly out: cut it short
		}
	}
	if rows.Err() != nil {
		panic(http.ErrAbortHandler)
	}
	_, _ = bw.WriteString("]\n")
	_ = bw.Flush()
}

func (h *handler) prepare(ctx context.Context, query string) (*sql.Stmt, error) {
	if v, ok := h.stmts.Load(query); ok {
		return v.(*sql.Stmt), nil
	}
	stmt, err := h.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if v, loaded := h.stmts.LoadOrStore(query, stmt); loaded {
		_ = stmt.Close()
		return v.(*sql.Stmt), nil
	}
	return stmt, nil
}

// listQuery is the service's listing statement (adapters/sqlstore listQuery) for the parameters
// of q, with PostgreSQL's placeholders: the page read in index order, limit+1 rows, with the count
// and the key of row number limit on every row.
func listQuery(q url.Values) (query string, args []any, limit int, desc bool, err error) {
	limit = 1000
	if s := q.Get("limit"); s != "" {
		if limit, err = strconv.Atoi(s); err != nil || limit < 1 || limit > 10_000 {
			return "", nil, 0, false, fmt.Errorf("bad limit")
		}
	}
	desc = q.Get("order") == "desc"
	w := " WHERE project_id = ?"
	args = []any{q.Get("project_id")}
	if v := q.Get("user_id"); v != "" {
		w += " AND user_id = ?"
		args = append(args, v)
	}
	if v := q.Get("log_level"); v != "" {
		w += " AND level = ?"
		args = append(args, v)
	}
	for _, p := range []struct{ name, cond string }{{"start_time", " AND time >= ?"}, {"end_time", " AND time <= ?"}} {
		if v := q.Get(p.name); v != "" {
			t, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return "", nil, 0, false, fmt.Errorf("bad %s", p.name)
			}
			w += p.cond
			args = append(args, t)
		}
	}
	dir, cmp := "ASC", ">"
	if desc {
		dir, cmp = "DESC", "<"
	}
	if v := q.Get("cursor"); v != "" {
		var c cursor
		b, err := base64.RawURLEncoding.DecodeString(v)
		if err != nil || json.Unmarshal(b, &c) != nil {
			return "", nil, 0, false, fmt.Errorf("bad cursor")
		}
		// First after the project, as the service puts it (see sqlstore's listQuery).
		w = strings.Replace(w, " WHERE project_id = ?", " WHERE project_id = ? AND (time, id) "+cmp+" (?, ?)", 1)
		args = append([]any{args[0], c.T, c.I}, args[1:]...)
	}
	order := " ORDER BY time " + dir + ", id " + dir
	args = append(append([]any{limit, limit}, args...), limit+1)
	query = "SELECT id, project_id, time, level, message, subject, user_id," +
		" count(*) OVER win AS found," +
		" nth_value(time, ?) OVER win AS last_time, nth_value(id, ?) OVER win AS last_id" +
		" FROM (SELECT id, project_id, time, level, message, subject, user_id FROM logs" + w + order + " LIMIT ?) page" +
		" WINDOW win AS (" + order + " ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)" +
		order
	return dollars(query), args, limit, desc, nil
}

// dollars numbers the ? placeholders of query as $1, $2, …
func dollars(query string) string {
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
