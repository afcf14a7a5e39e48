package domain

import (
	"context"
	"testing"
)

func TestAuthorizationByPrincipal(t *testing.T) {
	f := newFake()
	s := NewService(f, opts(Options{}))
	own, err := s.CreateProject(admin(t), ProjectInput{Name: "own"})
	if err != nil {
		t.Fatal(err)
	}
	other, _ := s.CreateProject(admin(t), ProjectInput{Name: "other"})
	anon := t.Context()
	key := WithPrincipal(t.Context(), Principal{ProjectID: own.ID})
	adm := admin(t)

	type call func(ctx context.Context) error
	calls := map[string]call{
		"create project": func(ctx context.Context) error { _, err := s.CreateProject(ctx, ProjectInput{Name: "x"}); return err },
		"list projects":  func(ctx context.Context) error { _, err := s.ListProjects(ctx); return err },
		"get own":        func(ctx context.Context) error { _, err := s.GetProject(ctx, own.ID); return err },
		"get other":      func(ctx context.Context) error { _, err := s.GetProject(ctx, other.ID); return err },
		"update own": func(ctx context.Context) error {
			_, err := s.UpdateProject(ctx, own.ID, ProjectInput{Name: "y"})
			return err
		},
		"write own logs": func(ctx context.Context) error {
			_, err := s.CreateLogs(ctx, []LogInput{{ProjectID: own.ID, Message: ptr("m")}}, "")
			return err
		},
		"write mixed": func(ctx context.Context) error {
			_, err := s.CreateLogs(ctx, []LogInput{{ProjectID: own.ID, Message: ptr("m")}, {ProjectID: other.ID, Message: ptr("m")}}, "")
			return err
		},
		"make hat": func(ctx context.Context) error { _, err := s.MakeHat(ctx, 3); return err },
		"list other logs": func(ctx context.Context) error {
			return s.ListLogs(ctx, LogQuery{LogFilter: LogFilter{ProjectID: other.ID}}, func(Page) error { return nil })
		},
		"delete own logs": func(ctx context.Context) error { _, err := s.DeleteLogs(ctx, LogFilter{ProjectID: own.ID}); return err },
	}
	// The outcome of a call is "ok" or the kind of its error: success has a name of its own, so a
	// call that fails for any other reason (an internal error included) cannot pass for allowed.
	const (
		ok     = "ok"
		unauth = "unauthenticated"
		denied = "forbidden"
	)
	if KindUnauthenticated.String() != unauth || KindForbidden.String() != denied {
		t.Fatalf("kind names changed: %q, %q", KindUnauthenticated, KindForbidden)
	}
	want := map[string][3]string{ // anonymous, project key, admin
		"create project":  {unauth, denied, ok},
		"list projects":   {unauth, denied, ok},
		"get own":         {unauth, ok, ok},
		"get other":       {unauth, denied, ok},
		"update own":      {unauth, denied, ok},
		"write own logs":  {unauth, ok, ok},
		"write mixed":     {unauth, denied, ok},
		"make hat":        {unauth, ok, ok},
		"list other logs": {unauth, denied, ok},
		"delete own logs": {unauth, ok, ok},
	}
	if len(want) != len(calls) {
		t.Fatalf("%d calls but %d expectations", len(calls), len(want))
	}
	for name, c := range calls {
		for i, ctx := range []context.Context{anon, key, adm} {
			err := c(ctx)
			got := ok
			if err != nil {
				got = KindOf(err).String()
			}
			if w := want[name][i]; got != w {
				t.Errorf("%s as %s: %v (%s), want %s", name, []string{"anonymous", "project key", "admin"}[i], err, got, w)
			}
		}
	}
	// Stored: own logs by the key and by the admin (1 + 1), the mixed batch by the admin (2).
	if len(f.inserted) != 4 {
		t.Errorf("%d entries reached the store, want 4", len(f.inserted))
	}
}

func TestRequireAdmin(t *testing.T) {
	cases := []struct {
		name string
		ctx  context.Context
		want Kind
	}{
		{"nobody", context.Background(), KindUnauthenticated},
		{"project key", WithPrincipal(context.Background(), Principal{ProjectID: testID(), KeyID: "k"}), KindForbidden},
	}
	for _, c := range cases {
		if got := KindOf(RequireAdmin(c.ctx)); got != c.want {
			t.Errorf("%s: RequireAdmin = %v, want %v", c.name, got, c.want)
		}
	}
	if err := RequireAdmin(WithPrincipal(context.Background(), Principal{Admin: true})); err != nil {
		t.Errorf("admin: RequireAdmin = %v", err)
	}
}
