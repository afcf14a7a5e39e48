package e2e

import (
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/twitchtv/twirp"

	"example.com/obsvc/api/haberdasher"
	"example.com/obsvc/app/server"
	"example.com/obsvc/domain"
)

func testMakeHat(t *testing.T, open storeOpener) {
	e := newEnv(t, open, nil)
	clients := map[string]haberdasher.Haberdasher{
		"json":     haberdasher.NewHaberdasherJSONClient(e.url, e.http),
		"protobuf": haberdasher.NewHaberdasherProtobufClient(e.url, e.http),
	}
	for name, c := range clients {
		t.Run(name, func(t *testing.T) {
			colors := map[string]bool{}
			for _, inches := range []int32{1, 12, 1 << 30} {
				for range 20 {
					hat, err := c.MakeHat(t.Context(), &haberdasher.Size{Inches: inches})
					if err != nil {
						t.Fatalf("MakeHat(%d): %v", inches, err)
					}
					if hat.GetInches() != inches {
						t.Errorf("hat of %d inches for %d", hat.GetInches(), inches)
					}
					if hat.GetColor() == "invisible" || !slices.Contains(domain.HatColors(), hat.GetColor()) {
						t.Errorf("color %q", hat.GetColor())
					}
					if name := hat.GetName(); !slices.Contains(domain.HatNames(), name) || strings.ContainsAny(name, " -") {
						t.Errorf("name %q is not one plain word from the list", name)
					}
					colors[hat.GetColor()] = true
				}
			}
			if len(colors) < 2 {
				t.Errorf("60 hats in %d colors: the color is not random", len(colors))
			}
			for _, inches := range []int32{0, -1, -1 << 31} {
				_, err := c.MakeHat(t.Context(), &haberdasher.Size{Inches: inches})
				var te twirp.Error
				if !errors.As(err, &te) || te.Code() != twirp.InvalidArgument || te.Meta("argument") != "inches" {
					t.Errorf("MakeHat(%d) = %v, want invalid_argument with argument inches", inches, err)
				}
			}
		})
	}
	t.Run("wire", func(t *testing.T) {
		path := "/twirp/rpc.example.haberdasher.Haberdasher/MakeHat"
		resp, body := e.do("POST", path, "application/json", `{"inches":0}`)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), `"argument":"inches"`) || !strings.Contains(string(body), `"code":"invalid_argument"`) {
			t.Errorf("invalid_argument on the wire = %d %s", resp.StatusCode, body)
		}
		resp, body = e.do("POST", "/twirp/rpc.example.haberdasher.Haberdasher/MakeScarf", "application/json", `{}`)
		if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), `"code":"bad_route"`) {
			t.Errorf("unknown method = %d %s, want 404 bad_route", resp.StatusCode, body)
		}
		resp, body = e.do("GET", path, "", "")
		if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), `"code":"bad_route"`) {
			t.Errorf("GET = %d %s, want 404 bad_route", resp.StatusCode, body)
		}
	})
}

func TestMakeHatIsDeterministicWithAFixedSource(t *testing.T) {
	svc, err := server.New(server.DefaultConfig(), openSQLiteStore(t), slog.New(slog.DiscardHandler), server.Deps{Rand: fixedRandom{n: 1}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(svc.Handler)
	defer srv.Close()
	hat, err := haberdasher.NewHaberdasherProtobufClient(srv.URL, srv.Client()).MakeHat(t.Context(), &haberdasher.Size{Inches: 7})
	if err != nil {
		t.Fatal(err)
	}
	if hat.GetInches() != 7 || hat.GetColor() != domain.HatColors()[1] || hat.GetName() != domain.HatNames()[1] {
		t.Fatalf("hat = %v, want 7 inches, %s, %s", hat, domain.HatColors()[1], domain.HatNames()[1])
	}
}
