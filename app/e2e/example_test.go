package e2e

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"

	"example.com/obsvc/adapters/sqlstore"
	"example.com/obsvc/api/rest"
	"example.com/obsvc/app/server"
)

// exampleServer starts the real service on an embedded store for the example and returns its
// URL and a function that stops it.
func exampleServer() (string, func()) {
	dir, _ := os.MkdirTemp("", "obsvc-example-")
	st, err := sqlstore.OpenSQLite(context.Background(), filepath.Join(dir, "x.db"), sqlstore.DefaultSQLiteOptions())
	if err != nil {
		panic(err)
	}
	svc, err := server.New(server.DefaultConfig(), st, slog.New(slog.DiscardHandler), server.Deps{})
	if err != nil {
		panic(err)
	}
	srv := httptest.NewServer(svc.Handler)
	return srv.URL, func() { srv.Close(); _ = st.Close(); _ = os.RemoveAll(dir) }
}

// Example_client is the program README's SDK section shows: the generated Go client creates a
// project and sends it a batch of logs.
func Example_client() {
	baseURL, stop := exampleServer()
	defer stop()

	ctx := context.Background()
	c, err := rest.NewClientWithResponses(baseURL)
	if err != nil {
		panic(err)
	}
	p, err := c.CreateProjectWithResponse(ctx, rest.ProjectInput{Name: "checkout"})
	if err != nil || p.JSON201 == nil {
		panic(fmt.Sprint(err, p.Status()))
	}
	level := "error"
	r, err := c.CreateLogsWithResponse(ctx, nil, []rest.LogEntryInput{
		{ProjectId: p.JSON201.Id, Message: "payment declined", Level: &level},
		{ProjectId: p.JSON201.Id, Message: "retry scheduled"},
	})
	if err != nil || r.JSON201 == nil {
		panic(fmt.Sprint(err, r.Status()))
	}
	fmt.Println("created", r.JSON201.Created, "entries in", p.JSON201.Name)
	// Output: created 2 entries in checkout
}
