package main

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"example.com/obsvc/adapters/sqlstore"
	"example.com/obsvc/domain"
)

// The query-language figures: the same entries in the service on PostgreSQL and on SQLite and,
// when its binary is present, in VictoriaLogs; each question's p50 beside VictoriaLogs' answer
// to the same question, asked alternately, and the bytes on disk per entry of each store.
//
// The corpus: rows entries over seedProjects projects and the seedDays days up to the hour of
// the run, each with a unique request id in its message (the needle) and OpenTelemetry-like
// attributes: a status code, a route, a service, a pod name of 50,000 values (the
// high-cardinality facet) and a session id of 1,000 values (an equality matching 0.1% of a
// project's entries).

// searchEntry is entry k of the corpus (project k mod seedProjects, number j = k / seedProjects
// of it), its time spread evenly from start over seedDays days.
func searchEntry(k, rows int, projects []string, start int64) domain.LogEntry {
	p, j := k%len(projects), k/len(projects)
	perProject := max(rows/len(projects), 1)
	t := start + int64(float64(j)*float64(seedDays*day)/float64(perProject))
	user := "user-" + strconv.Itoa((j*37+p)%seedUsers)
	route := "/api/v1/" + []string{"orders", "cart", "checkout", "users", "search"}[j%5] + "/{id}"
	status := []int{200, 200, 200, 201, 204, 301, 400, 404, 500, 503}[j%10]
	attrs := fmt.Sprintf(`{"http.response.status_code":%d,"http.route":%q,"k8s.pod.name":"checkout-7d9f-%05d","service.name":"svc-%d","session.id":"s-%04d"}`,
		status, route, (k*7919)%50_000, j%8, j%1000)
	return domain.LogEntry{
		ID:         fmt.Sprintf("%08x-%04x-7000-8000-%012x", t>>16, t&0xffff, k),
		ProjectID:  projects[p],
		Time:       t,
		Level:      seedLevels[j%len(seedLevels)],
		Message:    fmt.Sprintf("%s %s completed in %d ms request_id=%s tenant=%d", []string{"GET", "POST", "PUT"}[j%3], strings.Replace(route, "{id}", strconv.Itoa(j%5000), 1), k%900, requestID(k), k%37),
		Subject:    ptr("checkout"),
		UserID:     &user,
		Attributes: json.RawMessage(attrs),
	}
}

// requestID is entry k's request id: 16 hex digits, one word, unique per entry.
func requestID(k int) string {
	x := uint64(k) + 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return fmt.Sprintf("%016x", x^(x>>31))
}

func ptr[T any](v T) *T { return &v }

// seedSearchStore writes the corpus into a store through its own write path (so every column and
// index the service keeps is filled as the service fills it), 5,000 entries a batch.
func seedSearchStore(ctx context.Context, st interface {
	CreateProject(context.Context, domain.Project) error
	CreateLogs(context.Context, []domain.LogEntry, domain.LogWrite) (domain.Written, error)
}, rows int, start int64) ([]string, error) {
	var projects []string
	now := time.Now().UTC()
	for i := range seedProjects {
		id := fmt.Sprintf("0196a000-0000-7000-8000-%012d", i)
		if err := st.CreateProject(ctx, domain.Project{ID: id, Name: "search-" + strconv.Itoa(i), CreatedAt: now, UpdatedAt: now}); err != nil {
			return nil, err
		}
		projects = append(projects, id)
	}
	const batch = 5000
	buf := make([]domain.LogEntry, 0, batch)
	for k := 0; k < rows; k += batch {
		buf = buf[:0]
		for i := k; i < min(k+batch, rows); i++ {
			buf = append(buf, searchEntry(i, rows, projects, start))
		}
		if _, err := st.CreateLogs(ctx, buf, domain.LogWrite{}); err != nil {
			return nil, err
		}
	}
	return projects, nil
}

// victoriaLogs is the path of VictoriaLogs' binary: -victorialogs, else victoria-logs on PATH.
func (h *harness) victoriaLogs() string {
	if h.opts.victoriaLogs != "" {
		return h.opts.victoriaLogs
	}
	p, _ := exec.LookPath("victoria-logs")
	return p
}

// startVictoriaLogs starts VictoriaLogs on a free address with its data in the run's directory,
// keeping everything (no retention cut), and loads the corpus through its JSON lines API.
func (h *harness) startVictoriaLogs(ctx context.Context, bin string, rows int, projects []string, start int64) (*proc, string, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, "", err
	}
	data := filepath.Join(h.dir, "victorialogs")
	p, err := h.ps.start("victoria-logs", filepath.Join(h.dir, "victorialogs.log"), nil, nil, syscall.SIGTERM,
		bin, "-httpListenAddr", addr, "-storageDataPath", data, "-retentionPeriod", "100y", "-loggerLevel", "WARN")
	if err != nil {
		return nil, "", err
	}
	base := "http://" + addr
	if err := waitHTTP(ctx, p, base+"/health", time.Minute); err != nil {
		p.halt(30 * time.Second)
		return nil, "", err
	}
	pr, pw := io.Pipe()
	go func() {
		w := bufio.NewWriterSize(pw, 1<<20)
		var err error
		for k := 0; k < rows && err == nil; k++ {
			e := searchEntry(k, rows, projects, start)
			var line map[string]any
			if err = json.Unmarshal(e.Attributes, &line); err != nil {
				break
			}
			line["_time"] = time.UnixMilli(e.Time).UTC().Format(time.RFC3339Nano)
			line["_msg"] = e.Message
			line["project_id"], line["level"], line["subject"], line["user_id"], line["id"] = e.ProjectID, e.Level, *e.Subject, *e.UserID, e.ID
			var b []byte
			if b, err = json.Marshal(line); err == nil {
				_, _ = w.Write(b)
				err = w.WriteByte('\n')
			}
		}
		if err == nil {
			err = w.Flush()
		}
		pw.CloseWithError(err)
	}()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/insert/jsonline?_stream_fields=project_id", pr)
	req.Header.Set("Content-Type", "application/stream+json") // a form type would be read as form fields
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			err = fmt.Errorf("VictoriaLogs /insert/jsonline answered %d", resp.StatusCode)
		}
	}
	_ = pr.Close()
	if err == nil {
		err = getOK(ctx, base+"/internal/force_flush")
	}
	if err != nil {
		p.halt(30 * time.Second)
		return nil, "", err
	}
	return p, base, nil
}

// vacuum settles the seeded tables of the database at dbURL, as the read table is settled.
func vacuum(ctx context.Context, dbURL string) error {
	db, err := sql.Open("postgres", dbURL)
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.ExecContext(ctx, "VACUUM ANALYZE")
	return err
}

func getOK(ctx context.Context, u string) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %d %s", u, resp.StatusCode, oneLine(string(body)))
	}
	return nil
}

// p50 times n GETs of each url in turn (after a warm-up of each), alternating, and returns each
// one's median in ms and its last body's size.
func p50(ctx context.Context, n int, urls ...func(i int) string) ([]float64, []int, error) {
	times := make([][]float64, len(urls))
	sizes := make([]int, len(urls))
	for i := -5; i < n; i++ {
		for u, mk := range urls {
			if mk == nil {
				continue
			}
			target := mk(i + 5)
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
			start := time.Now()
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return nil, nil, err
			}
			body, err := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			el := time.Since(start)
			if err != nil || resp.StatusCode != http.StatusOK {
				return nil, nil, fmt.Errorf("GET %s: %d %v %s", target, resp.StatusCode, err, oneLine(string(body)))
			}
			if i >= 0 {
				times[u] = append(times[u], float64(el.Microseconds())/1000)
			}
			sizes[u] = len(body)
		}
	}
	out := make([]float64, len(urls))
	for u, ts := range times {
		if len(ts) > 0 {
			slices.Sort(ts)
			out[u] = ts[len(ts)/2]
		}
	}
	return out, sizes, nil
}

// measureSearch: the query-language figures.
func (h *harness) measureSearch(ctx context.Context) error {
	rows := h.opts.searchRows
	start := (time.Now().UnixMilli()/3_600_000)*3_600_000 - seedDays*day
	end := start + seedDays*day
	h.logf("search: writing %s entries through the store, PostgreSQL then SQLite", thousands(int64(rows)))
	began := time.Now()
	pgURL := h.pg.DatabaseURL("search")
	pgStore, err := sqlstore.OpenPostgres(ctx, pgURL, sqlstore.DefaultPostgresOptions())
	if err != nil {
		return err
	}
	projects, err := seedSearchStore(ctx, pgStore, rows, start)
	if cerr := pgStore.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("seed PostgreSQL: %w", err)
	}
	if err := vacuum(ctx, pgURL); err != nil {
		return err
	}
	sqlitePath := filepath.Join(h.dir, "search.db")
	liteStore, err := sqlstore.OpenSQLite(ctx, sqlitePath, sqlstore.DefaultSQLiteOptions())
	if err != nil {
		return err
	}
	_, err = seedSearchStore(ctx, liteStore, rows, start)
	if cerr := liteStore.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("seed SQLite: %w", err)
	}
	h.logf("search: written in %v", time.Since(began).Round(time.Second))

	var vl string
	var vlProc *proc
	if bin := h.victoriaLogs(); bin == "" {
		h.logf("search: VictoriaLogs is not installed (-victorialogs, or victoria-logs on PATH; go install github.com/VictoriaMetrics/VictoriaLogs/app/victoria-logs@v1.52.1): its column stays empty")
	} else {
		began = time.Now()
		p, base, err := h.startVictoriaLogs(ctx, bin, rows, projects, start)
		if err != nil {
			return fmt.Errorf("VictoriaLogs: %w", err)
		}
		defer p.halt(30 * time.Second)
		vl, vlProc = base, p
		h.logf("search: VictoriaLogs loaded in %v", time.Since(began).Round(time.Second))
	}

	pgSvc, pgBase, err := h.startService(ctx, "search-postgres", pgURL, false)
	if err != nil {
		return err
	}
	defer pgSvc.halt(30 * time.Second)
	liteSvc, liteBase, err := h.startService(ctx, "search-sqlite", "sqlite:"+sqlitePath, false)
	if err != nil {
		return err
	}
	defer liteSvc.halt(30 * time.Second)

	p := projects[3]
	perProject := rows / seedProjects
	daySpan := fmt.Sprintf("&start_time=%d&end_time=%d", end-2*day, end-day-1)
	month := fmt.Sprintf("&start_time=%d&end_time=%d", start, end)
	vlRange := func(from, to int64) string {
		return "&start=" + time.UnixMilli(from).UTC().Format(time.RFC3339Nano) + "&end=" + time.UnixMilli(to).UTC().Format(time.RFC3339Nano)
	}
	// needle(i) is the request id of a different entry of project 3 each time.
	needle := func(i int) string { return requestID(3 + seedProjects*((i*7919)%perProject)) }
	session := func(i int) string { return fmt.Sprintf("s-%04d", (i*37)%1000) }
	// The targets are the query language's: a needle within 2x of VictoriaLogs on PostgreSQL and
	// 5x on SQLite, the equality and facets within 2x on both; the common word and the day of
	// counts have none of their own and keep the needle's.
	questions := []struct {
		name      string
		ours      func(i int) string
		vl        func(i int) string
		pgTarget  float64
		sqlTarget float64
	}{
		{"a needle word (a request id) over 30 days of one project",
			func(i int) string { return "/logs?project_id=" + p + month + "&limit=100&query=" + needle(i) },
			func(i int) string {
				return "/select/logsql/query?limit=100" + vlRange(start, end) + "&query=" + url.QueryEscape(`{project_id="`+p+`"} "`+needle(i)+`"`)
			}, 2, 5},
		{"an attribute equal to one of 1,000 values (0.1% of a project), newest 100",
			func(i int) string {
				return "/logs?project_id=" + p + month + "&order=desc&limit=100&query=" + url.QueryEscape(`session.id:"`+session(i)+`"`)
			},
			func(i int) string {
				return "/select/logsql/query?" + vlRange(start, end) + "&query=" + url.QueryEscape(`{project_id="`+p+`"} session.id:="`+session(i)+`" | sort by (_time desc) | limit 100`)
			}, 2, 2},
		{"facets: top 10 of a 50,000-value attribute over a day",
			func(int) string { return "/logs/facets?project_id=" + p + daySpan + "&field=k8s.pod.name&limit=10" },
			func(int) string {
				return "/select/logsql/query?" + vlRange(end-2*day, end-day-1) + "&query=" + url.QueryEscape(`{project_id="`+p+`"} | top 10 (k8s.pod.name)`)
			}, 2, 2},
		{"newest 100 entries with a common word",
			func(int) string { return "/logs?project_id=" + p + month + "&order=desc&limit=100&query=completed" },
			func(int) string {
				return "/select/logsql/query?" + vlRange(start, end) + "&query=" + url.QueryEscape(`{project_id="`+p+`"} completed | sort by (_time desc) | limit 100`)
			}, 2, 5},
		{"a day of counts by level, hourly",
			func(int) string { return "/logs/stats?project_id=" + p + daySpan + "&step=3600000&by=level" },
			func(int) string {
				return "/select/logsql/hits?step=1h&field=level" + vlRange(end-2*day, end-day-1) + "&query=" + url.QueryEscape(`{project_id="`+p+`"}`)
			}, 2, 5},
	}
	for _, q := range questions {
		for _, st := range []struct {
			name, base string
			target     float64
		}{{"PostgreSQL", pgBase, q.pgTarget}, {"SQLite", liteBase, q.sqlTarget}} {
			f := figure{Name: fmt.Sprintf("Search p50, %s, %s rows: %s", st.name, thousands(int64(rows)), q.name), Unit: "ms", Target: st.target}
			var vlURL func(int) string
			if vl != "" {
				vlURL = func(i int) string { return vl + q.vl(i) }
			}
			h.logf("search: %s", f.Name)
			ms, sizes, err := p50(ctx, 30, func(i int) string { return st.base + q.ours(i) }, vlURL)
			switch {
			case err != nil:
				f.Err = err
			case vl == "":
				f.Ours, f.Note = ms[0], "VictoriaLogs not installed: no baseline"
			default:
				f.Ours, f.Baseline = ms[0], ms[1]
				f.Note = fmt.Sprintf("bodies %d / %d bytes", sizes[0], sizes[1])
			}
			h.figs = append(h.figs, f)
		}
	}
	if vlProc != nil {
		vlProc.halt(time.Minute) // it writes what it still holds in memory as it stops
	}
	return h.reportBytes(ctx, rows, pgURL, sqlitePath, vl != "")
}

// reportBytes logs the bytes on disk per entry of each store, relation by relation.
func (h *harness) reportBytes(ctx context.Context, rows int, pgURL, sqlitePath string, withVL bool) error {
	db, err := sql.Open("postgres", pgURL)
	if err != nil {
		return err
	}
	defer db.Close()
	rs, err := db.QueryContext(ctx, `SELECT c.relname, pg_relation_size(c.oid) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'i', 't', 'm') ORDER BY 2 DESC`)
	if err != nil {
		return err
	}
	defer rs.Close()
	var total int64
	var parts []string
	for rs.Next() {
		var name string
		var n int64
		if err := rs.Scan(&name, &n); err != nil {
			return err
		}
		total += n
		if n >= 8192*16 {
			parts = append(parts, fmt.Sprintf("%s %.0f", name, float64(n)/float64(rows)))
		}
	}
	if err := rs.Err(); err != nil {
		return err
	}
	h.logf("bytes per entry on disk, PostgreSQL: %.0f (%s)", float64(total)/float64(rows), strings.Join(parts, ", "))
	var lite int64
	for _, suffix := range []string{"", "-wal"} {
		if fi, err := os.Stat(sqlitePath + suffix); err == nil {
			lite += fi.Size()
		}
	}
	h.logf("bytes per entry on disk, SQLite: %.0f (the database file and its WAL)", float64(lite)/float64(rows))
	if withVL {
		var vl int64
		_ = filepath.WalkDir(filepath.Join(h.dir, "victorialogs"), func(_ string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				if fi, err := d.Info(); err == nil {
					vl += fi.Size()
				}
			}
			return nil
		})
		h.logf("bytes per entry on disk, VictoriaLogs: %.0f", float64(vl)/float64(rows))
	}
	return nil
}
