package migrations

import (
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"io/fs"
	"path"
	"testing"

	_ "github.com/lib/pq"
	"github.com/pressly/goose/v3"
	_ "modernc.org/sqlite"
)

// released is one migration as a release shipped it: its version, whether it is SQL or Go, and
// for SQL the file's name and the SHA-256 of its bytes.
type released struct {
	version int64
	typ     goose.MigrationType
	file    string
	sha256  string
}

// TestVersions lists the migrations of both engines and checks them against what the releases
// shipped: the same versions of the same kind, and every SQL file byte for byte, so that a
// database written by an earlier release migrates exactly as before. A new migration adds a row;
// a released row never changes.
func TestVersions(t *testing.T) {
	for _, c := range []struct {
		name     string
		driver   string
		dsn      string
		provider func(*sql.DB, ...goose.ProviderOption) (*goose.Provider, error)
		files    fs.FS
		dir      string
		want     []released
	}{
		{"sqlite", "sqlite", ":memory:", SQLite, sqliteMigrations, "sqlite", []released{
			{1, goose.TypeSQL, "00001_init.sql", "f5e8eb7e2c7ac20e8ac216ed4c193ade2db8893df85269e5632ba4c46861b742"},
			{2, goose.TypeSQL, "00002_idempotency.sql", "74fcb4b44390aaf73682e14b9eb41a48863d50a6ddf59109f7c0e2f7fffdda5e"},
			{4, goose.TypeSQL, "00004_entry_attributes_trace.sql", "8ab3728cc2173368614cbb2202537e31287c3a6696a2522ba61b238e2dc47a6d"},
			{5, goose.TypeSQL, "00005_retention.sql", "80307dda5c5dcabc77d8bf48c9c884867accb9fd2636ee8642a37afe1cbc6503"},
			{7, goose.TypeSQL, "00007_tail_order.sql", "90c76791aab70cdef148bfd2984108156e004966ca7b44bf214f13afad7fff63"},
			{8, goose.TypeSQL, "00008_log_counts_hour.sql", "0a1b72647f95982b1b837f82e371d3e86a9f9ecaf903d2a21dbda8778120ad55"},
			{10, goose.TypeSQL, "00010_tail_batches.sql", "abe3f8b90cc6143f8a2004cfcd63b03ce4e4c80caea7477f9f73adf54bf8a103"},
			{13, goose.TypeSQL, "00013_searches.sql", "d1e6fa171388c7eb212280e1d2f559a49b4e4e969801ee787aec4d4ffed7067d"},
			{14, goose.TypeSQL, "00014_alerts.sql", "0d08e21536c56cb40aa7659c156b8fb6d2589b4d2a5ab4a95fd9d0a77f256eb1"},
			{15, goose.TypeSQL, "00015_alert_counts.sql", "c0e3ba03c4fa17c87ed1215759139a1a993cb854e71131f27988ca8f7f9a2f10"},
			{3, goose.TypeGo, "", ""},
			{6, goose.TypeGo, "", ""},
			{9, goose.TypeGo, "", ""},
			{11, goose.TypeGo, "", ""},
			{12, goose.TypeGo, "", ""},
			{17, goose.TypeGo, "", ""},
			{18, goose.TypeGo, "", ""},
			{19, goose.TypeGo, "", ""},
		}},
		{"postgres", "postgres", "postgres://localhost/none", Postgres, postgresMigrations, "postgres", []released{
			{1, goose.TypeSQL, "00001_init.sql", "f54efb4ab284b3f21544b86b3409c0e4fb7feab5e2abfc3fcb53ba5bed725009"},
			{2, goose.TypeSQL, "00002_idempotency.sql", "d86168aa6cb4badefd3f90ea994a4a6c6dcf3872c605595111c4371692722c6f"},
			{3, goose.TypeSQL, "00003_hash_idempotency_scope.sql", "5709122c5458a70dc323e1ad8701ebf71b0598ac66e2e8501a22b79c46ad64ba"},
			{4, goose.TypeSQL, "00004_entry_attributes_trace.sql", "96b016e23b379547452059a752fd1685ce4b18c03256d073e965125893de2478"},
			{5, goose.TypeSQL, "00005_retention.sql", "d15aa118572719af8aca74e832c9c9594789876db5da917885de2110de740f32"},
			{7, goose.TypeSQL, "00007_tail_order.sql", "bfd95469baa5ff5ad8c09362dcc30287fb7490ac0ce72636d87ab07225e609c0"},
			{8, goose.TypeSQL, "00008_log_counts_hour.sql", "ad73fdbfff61fce3b95705a93a06fa6d49acfc80d6ba6da27d3656b19b9e725c"},
			{10, goose.TypeSQL, "00010_tail_batches.sql", "165917921305710c207f8834c42d35b16d2f05a87729a9143fb15e4fac91f8e7"},
			{13, goose.TypeSQL, "00013_searches.sql", "781db8a2a0baa1f0f3c7c5c147ee4b56011bc3f49d614d6d616c3df86c777bd4"},
			{14, goose.TypeSQL, "00014_alerts.sql", "a5aab5add5297863ab52ba8f5d38f5bcf87981db8ccb67e3678474534124fe64"},
			{15, goose.TypeSQL, "00015_alert_counts.sql", "70bd5a3f741348c0166c4d40dbefd8ab3b1cfc3285a38cc2df2546bdc77ead71"},
			{6, goose.TypeGo, "", ""},
			{9, goose.TypeGo, "", ""},
			{11, goose.TypeGo, "", ""},
			{12, goose.TypeGo, "", ""},
			{16, goose.TypeGo, "", ""},
			{17, goose.TypeGo, "", ""},
			{18, goose.TypeGo, "", ""},
			{19, goose.TypeGo, "", ""},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			// Opening connects to nothing: listing the sources reads only the embedded files.
			db, err := sql.Open(c.driver, c.dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			p, err := c.provider(db)
			if err != nil {
				t.Fatalf("provider: %v", err)
			}
			want := map[int64]released{}
			for _, r := range c.want {
				want[r.version] = r
			}
			got := map[int64]released{}
			for _, s := range p.ListSources() {
				r := released{version: s.Version, typ: s.Type}
				if s.Type == goose.TypeSQL {
					r.file = path.Base(s.Path)
					b, err := fs.ReadFile(c.files, path.Join(c.dir, r.file))
					if err != nil {
						t.Fatalf("read %s: %v", r.file, err)
					}
					sum := sha256.Sum256(b)
					r.sha256 = hex.EncodeToString(sum[:])
				}
				if _, dup := got[r.version]; dup {
					t.Errorf("version %d listed twice", r.version)
				}
				got[r.version] = r
			}
			for v, w := range want {
				if g, ok := got[v]; !ok {
					t.Errorf("version %d missing, want %+v", v, w)
				} else if g != w {
					t.Errorf("version %d = %+v, want %+v", v, g, w)
				}
			}
			for v, g := range got {
				if _, ok := want[v]; !ok {
					t.Errorf("version %d = %+v, not in the released set", v, g)
				}
			}
		})
	}
}
