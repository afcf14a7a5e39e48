// Command stock is the baseline of the outside harness's MakeHat figure: the generated Twirp
// Haberdasher server with no hooks and no middleware, MakeHat as a minimal service would write it,
// on a plain net/http server.
//
//	stock -addr 127.0.0.1:8081
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/twitchtv/twirp"

	"example.com/obsvc/api/haberdasher"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8081", "`host:port` to listen on")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv := &http.Server{Addr: *addr, Handler: haberdasher.NewHaberdasherServer(hats{}), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(os.Stderr, "stock:", err)
		os.Exit(1)
	}
}

var (
	colors = []string{"white", "black", "brown", "red", "blue", "green", "grey", "navy", "burgundy", "olive"}
	names  = []string{"bowler", "fedora", "beret", "trilby", "boater", "stetson", "beanie", "cloche", "panama", "homburg"}
)

type hats struct{}

func (hats) MakeHat(_ context.Context, s *haberdasher.Size) (*haberdasher.Hat, error) {
	if s.GetInches() <= 0 {
		return nil, twirp.InvalidArgumentError("inches", "must be positive")
	}
	return &haberdasher.Hat{Inches: s.GetInches(), Color: colors[rand.IntN(len(colors))], Name: names[rand.IntN(len(names))]}, nil
}
