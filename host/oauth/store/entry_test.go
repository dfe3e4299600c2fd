//go:build unix

package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/oauth2"
)

func TestSecretsNeverPrinted(t *testing.T) {
	k := Key{Owner: "exec-1", Server: "docs", URL: "https://docs.test/mcp"}
	e := entryFor(k, "print")
	e.UpdatedAt = time.Date(2029, 5, 6, 7, 8, 9, 0, time.UTC)

	var outputs []string
	add := func(what, s string) { outputs = append(outputs, what+": "+s) }
	add("String", e.String())
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%d", "%10.3v"} {
		add(verb, fmt.Sprintf(verb, e))
		add(verb+" pointer", fmt.Sprintf(verb, &e))
		add(verb+" slice", fmt.Sprintf(verb, []Entry{e}))
		add(verb+" map", fmt.Sprintf(verb, map[string]Entry{"k": e}))
		add(verb+" exported field", fmt.Sprintf(verb, struct{ E Entry }{e}))
	}
	add("error %w", fmt.Errorf("refresh of %v failed: %w", e, errors.New("x")).Error())
	for what, v := range map[string]any{"value": e, "pointer": &e, "slice": []Entry{e}, "field": struct{ E Entry }{e}} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		add("json "+what, string(b))
	}
	var logs bytes.Buffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("login", "entry", e, "ptr", &e)
	slog.New(slog.NewTextHandler(&logs, nil)).Info("login", "entry", e, "ptr", &e)
	for _, jsonFormat := range []bool{false, true} {
		hclog.New(&hclog.LoggerOptions{Output: &logs, JSONFormat: jsonFormat}).Info("login", "entry", e, "ptr", &e)
	}
	add("loggers", logs.String())

	for _, out := range outputs {
		if strings.Contains(out, secretMark) {
			// Name the output, never print it: it holds the secret.
			t.Errorf("%s shows a secret value", strings.SplitN(out, ":", 2)[0])
		}
	}
	// What they do show.
	for _, want := range []string{"exec-1/docs https://docs.test/mcp", `client_id="client-print"`, "expiry=2030-01-02T03:04:05Z", "refresh_token=yes"} {
		if !strings.Contains(e.String(), want) {
			t.Errorf("String() = %q lacks %q", e.String(), want)
		}
	}
	var form map[string]any
	if err := json.Unmarshal([]byte(mustJSON(t, e)), &form); err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{"owner", "server", "url", "client_id", "issuer", "scopes", "expiry", "has_refresh_token", "has_client_secret", "updated_at"} {
		if _, ok := form[field]; !ok {
			t.Errorf("the JSON logging form lacks %q: %s", field, mustJSON(t, e))
		}
	}
	if form["has_refresh_token"] != true || form["has_client_secret"] != true {
		t.Errorf("the JSON logging form does not report the refresh token and client secret: %s", mustJSON(t, e))
	}
	if e2 := (Entry{Key: k}); !strings.Contains(e2.String(), "refresh_token=no") || !strings.Contains(e2.String(), "expiry=none") {
		t.Errorf("String of an empty entry = %q", e2.String())
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The store's own errors carry no secret, even where the input that caused them is one.
func TestErrorsCarryNoSecret(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	k := Key{Owner: OwnerLocal, Server: "s", URL: "https://s.test/"}
	huge := entryFor(k, "huge")
	huge.AccessToken = secretMark + strings.Repeat("A", MaxFileSize)
	err := s.Put(ctx, huge)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Put of an entry over the cap = %v; want ErrTooLarge", err)
	}
	if strings.Contains(err.Error(), secretMark) || len(err.Error()) > 500 {
		t.Fatal("the ErrTooLarge error shows the entry")
	}
	if err := s.Put(ctx, entryFor(k, "1")); err != nil {
		t.Fatal(err)
	}
	err = s.Update(ctx, k, func(old Entry, ok bool) (Entry, bool, error) {
		old.Server = "other"
		return old, true, nil
	})
	if !errors.Is(err, ErrKeyMismatch) || strings.Contains(err.Error(), secretMark) {
		t.Fatalf("key mismatch error = %v", err != nil)
	}
}

func TestTokenConversion(t *testing.T) {
	k := Key{Owner: OwnerLocal, Server: "s", URL: "https://s.test/"}
	exp := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)
	tok := (&oauth2.Token{AccessToken: "at1", TokenType: "Bearer", RefreshToken: "rt1", Expiry: exp}).
		WithExtra(map[string]any{"scope": "read  write"})
	e := FromToken(k, tok)
	if e.Key != k || e.AccessToken != "at1" || e.RefreshToken != "rt1" || e.TokenType != "Bearer" || !e.Expiry.Equal(exp) ||
		strings.Join(e.Scopes, ",") != "read,write" || !e.HasRefreshToken() {
		t.Fatalf("FromToken = %s scopes %v", e, e.Scopes)
	}
	back := e.Token()
	if back.AccessToken != "at1" || back.RefreshToken != "rt1" || back.TokenType != "Bearer" || !back.Expiry.Equal(exp) {
		t.Fatal("Token() does not give back the stored token")
	}
	// A refresh response without a refresh token or scope keeps the old ones.
	e2 := e.WithToken(&oauth2.Token{AccessToken: "at2", TokenType: "Bearer", Expiry: exp.Add(time.Hour)})
	if e2.AccessToken != "at2" || e2.RefreshToken != "rt1" || strings.Join(e2.Scopes, ",") != "read,write" || !e2.Expiry.Equal(exp.Add(time.Hour)) {
		t.Fatalf("WithToken without a refresh token = %s", e2)
	}
	// One with a new refresh token replaces it.
	if e3 := e.WithToken(&oauth2.Token{AccessToken: "at3", RefreshToken: "rt3"}); e3.RefreshToken != "rt3" {
		t.Fatal("WithToken kept the old refresh token over a new one")
	}
	if (Entry{Key: k}).Token() != nil || e.WithToken(nil).Token() != nil || e.WithToken(nil).HasRefreshToken() {
		t.Fatal("an entry without an access token yields a token")
	}
}
