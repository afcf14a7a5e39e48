// Command load is the load generator of the outside harness (go run ./app/bench/harness): a process
// of its own, so the servers it measures share no runtime with it. Each mode runs one measurement
// and prints its result as one JSON object on stdout; anything wrong exits non-zero.
//
//	load post   -url URL -project ID      POST /logs batches through the service
//	load copy   -db URL -project ID       the same rows by COPY, 1,000 per transaction
//	load sqlite -db PATH -project ID      the same rows by a prepared INSERT, 1,000 per transaction
//	load get    -base URL,URL -path P     p50 of one GET against each base, alternating
//	load hat    -url URL                  MakeHat calls per second over many connections
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("want a mode: post, copy, sqlite, get or hat")
	}
	mode, args := args[0], args[1:]
	fs := flag.NewFlagSet("load "+mode, flag.ContinueOnError)
	var (
		url     = fs.String("url", "", "base URL of the server (post, hat)")
		db      = fs.String("db", "", "database URL (copy) or SQLite file (sqlite)")
		project = fs.String("project", "", "project id of the rows (post, copy, sqlite)")
		batches = fs.Int("batches", 100, "batches to send (post, copy, sqlite)")
		batch   = fs.Int("batch", 1000, "entries per batch (post, copy, sqlite)")
		clients = fs.Int("clients", 2, "concurrent clients or workers (post, copy, sqlite)")
		seed    = fs.Int("seed", 0, "first batch number: rounds with different seeds send different rows")
		bases   = fs.String("base", "", "comma-separated base URLs, measured in turn (get)")
		path    = fs.String("path", "", "path and query of the request (get)")
		next    = fs.Bool("next", false, "measure the page the first answer's Link names instead (get)")
		n       = fs.Int("n", 300, "measured requests per base (get)")
		warm    = fs.Int("warm", 30, "unmeasured requests per base first (get)")
		conns   = fs.Int("conns", 50, "connections (hat)")
		dur     = fs.Duration("duration", 0, "how long to call (hat)")
		enc     = fs.String("enc", "protobuf", "protobuf or json (hat)")
	)
	if err := fs.Parse(args); err != nil {
		return err
	}
	var res any
	var err error
	switch mode {
	case "post":
		res, err = ingestHTTP(ctx, *url, *project, *seed, *batches, *batch, *clients)
	case "copy":
		res, err = ingestCopy(ctx, *db, *project, *seed, *batches, *batch, *clients)
	case "sqlite":
		res, err = ingestSQLite(ctx, *db, *project, *seed, *batches, *batch, *clients)
	case "get":
		res, err = latency(ctx, splitList(*bases), *path, *next, *warm, *n)
	case "hat":
		res, err = hats(ctx, *url, *enc, *conns, *dur)
	default:
		return fmt.Errorf("unknown mode %q", mode)
	}
	if err != nil {
		return err
	}
	return writeJSON(os.Stdout, res)
}
