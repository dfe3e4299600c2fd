package store

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"

	"golang.org/x/oauth2"
)

// OwnerLocal is the Owner of a login made by, and used only by, the host itself. Any other
// Owner is an executor id.
const OwnerLocal = "local"

// Key identifies one login: the environment that owns it (OwnerLocal or an executor id),
// the server's configured name and its URL exactly as configured. Two keys are the same
// login only when all three fields are equal, so a host-owned and an executor-owned login
// for the same URL never share an entry. A Key holds no secret and is safe to log.
type Key struct {
	Owner  string
	Server string
	URL    string
}

// Validate reports whether k can name an entry: no field empty, Owner and Server free of
// control characters (they appear in log lines), and URL an absolute http(s) URL with a
// host and no userinfo or fragment. Errors wrap ErrInvalidKey and never echo a field's
// value (a URL with userinfo may carry a password).
func (k Key) Validate() error {
	if err := checkName("owner", k.Owner); err != nil {
		return err
	}
	if err := checkName("server name", k.Server); err != nil {
		return err
	}
	if k.URL == "" {
		return fmt.Errorf("%w: the URL is empty", ErrInvalidKey)
	}
	u, err := url.Parse(k.URL)
	if err != nil {
		// url.Parse's error text quotes the URL; say only that it did not parse.
		return fmt.Errorf("%w: the URL does not parse", ErrInvalidKey)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("%w: the URL's scheme is not http or https", ErrInvalidKey)
	case u.Host == "":
		return fmt.Errorf("%w: the URL has no host", ErrInvalidKey)
	case u.User != nil:
		return fmt.Errorf("%w: the URL carries userinfo (credentials belong in the store, not the URL)", ErrInvalidKey)
	case u.Fragment != "" || strings.Contains(k.URL, "#"):
		return fmt.Errorf("%w: the URL has a fragment", ErrInvalidKey)
	}
	return nil
}

func checkName(field, v string) error {
	if v == "" {
		return fmt.Errorf("%w: the %s is empty", ErrInvalidKey, field)
	}
	if strings.IndexFunc(v, unicode.IsControl) >= 0 {
		return fmt.Errorf("%w: the %s contains a control character", ErrInvalidKey, field)
	}
	return nil
}

// String returns "owner/server url", for log lines and error text.
func (k Key) String() string { return k.Owner + "/" + k.Server + " " + k.URL }

// compare orders keys by owner, then server name, then URL.
func (k Key) compare(o Key) int {
	if c := strings.Compare(k.Owner, o.Owner); c != 0 {
		return c
	}
	if c := strings.Compare(k.Server, o.Server); c != 0 {
		return c
	}
	return strings.Compare(k.URL, o.URL)
}

// Entry is one stored login: the OAuth client the host registered (or was configured
// with) at the server's authorization server, and the latest token it obtained.
//
// ClientSecret, AccessToken and RefreshToken are secrets. String, Format (every fmt verb,
// %#v included), MarshalJSON and LogValue print only the key, client id, issuer, scopes,
// expiry, update time and whether a refresh token and a client secret exist, so an Entry
// or *Entry handed to a logger, an error or fmt never shows them. (fmt cannot call methods
// on an unexported field of an enclosing struct: do not keep an Entry there and print the
// enclosing struct.) The file encoding is a separate unexported type.
//
// An Entry is a value; copies share only the Scopes backing array.
type Entry struct {
	Key
	// ClientID and ClientSecret identify the OAuth client: pre-registered (configured) or
	// obtained by dynamic client registration. ClientSecret is empty for a public client.
	ClientID     string
	ClientSecret string
	// Issuer is the authorization server's issuer identifier the token came from.
	Issuer string
	// TokenURL is the authorization server's token endpoint, where the token is refreshed
	// without discovering the server's metadata again; TokenAuth is how the client
	// authenticates there: "header" (HTTP Basic), "params" (client_secret_post) or ""
	// (try both, golang.org/x/oauth2's auto-detection).
	TokenURL  string
	TokenAuth string

	AccessToken  string
	RefreshToken string
	TokenType    string
	// Expiry is when AccessToken expires; zero means the server did not say.
	Expiry time.Time
	Scopes []string
	// UpdatedAt is set by the Store on every write.
	UpdatedAt time.Time
}

// Token returns the entry's token in the form golang.org/x/oauth2 uses (for a TokenSource
// or auth.AuthorizationCodeHandler's InitialTokenSource), or nil when there is no access
// token.
func (e Entry) Token() *oauth2.Token {
	if e.AccessToken == "" {
		return nil
	}
	return &oauth2.Token{
		AccessToken:  e.AccessToken,
		TokenType:    e.TokenType,
		RefreshToken: e.RefreshToken,
		Expiry:       e.Expiry,
	}
}

// WithToken returns e with its token replaced by t's. A refresh response may omit the
// refresh token, in which case the old one stays valid (RFC 6749 §6) and is kept; likewise
// the scopes, which are replaced only when t carries a "scope" value. A nil t clears the
// token.
func (e Entry) WithToken(t *oauth2.Token) Entry {
	if t == nil {
		e.AccessToken, e.RefreshToken, e.TokenType, e.Expiry = "", "", "", time.Time{}
		return e
	}
	e.AccessToken = t.AccessToken
	e.TokenType = t.TokenType
	e.Expiry = t.Expiry
	if t.RefreshToken != "" {
		e.RefreshToken = t.RefreshToken
	}
	if s, ok := t.Extra("scope").(string); ok && s != "" {
		e.Scopes = strings.Fields(s)
	}
	return e
}

// FromToken returns a new entry for k holding t (see WithToken); the caller fills in the
// client and issuer.
func FromToken(k Key, t *oauth2.Token) Entry { return Entry{Key: k}.WithToken(t) }

// HasRefreshToken reports whether the entry can be refreshed without a new login.
func (e Entry) HasRefreshToken() bool { return e.RefreshToken != "" }

// String describes the entry without its secrets.
func (e Entry) String() string {
	var b strings.Builder
	b.WriteString("oauth credential ")
	b.WriteString(e.Key.String())
	b.WriteString(" client_id=")
	b.WriteString(strconv.Quote(e.ClientID))
	if e.Issuer != "" {
		b.WriteString(" issuer=")
		b.WriteString(e.Issuer)
	}
	b.WriteString(" expiry=")
	if e.Expiry.IsZero() {
		b.WriteString("none")
	} else {
		b.WriteString(e.Expiry.UTC().Format(time.RFC3339))
	}
	b.WriteString(" refresh_token=")
	b.WriteString(yesNo(e.RefreshToken != ""))
	return b.String()
}

// Format prints String for every verb, so %v, %+v, %#v, %s and %q cannot reach the
// secret fields through fmt's reflection.
func (e Entry) Format(f fmt.State, verb rune) {
	if verb == 'q' {
		fmt.Fprint(f, strconv.Quote(e.String()))
		return
	}
	fmt.Fprint(f, e.String())
}

// logForm is what loggers see of an Entry.
type logForm struct {
	Owner           string    `json:"owner"`
	Server          string    `json:"server"`
	URL             string    `json:"url"`
	ClientID        string    `json:"client_id"`
	Issuer          string    `json:"issuer,omitempty"`
	TokenURL        string    `json:"token_url,omitempty"`
	Scopes          []string  `json:"scopes,omitempty"`
	Expiry          time.Time `json:"expiry,omitzero"`
	HasRefreshToken bool      `json:"has_refresh_token"`
	HasClientSecret bool      `json:"has_client_secret"`
	UpdatedAt       time.Time `json:"updated_at,omitzero"`
}

func (e Entry) logForm() logForm {
	return logForm{
		Owner: e.Owner, Server: e.Server, URL: e.URL,
		ClientID: e.ClientID, Issuer: e.Issuer, TokenURL: e.TokenURL, Scopes: e.Scopes,
		Expiry: e.Expiry, HasRefreshToken: e.RefreshToken != "", HasClientSecret: e.ClientSecret != "",
		UpdatedAt: e.UpdatedAt,
	}
}

// MarshalJSON is the logging form (JSON log lines, status output): no secret values. It is
// not the file format.
func (e Entry) MarshalJSON() ([]byte, error) { return json.Marshal(e.logForm()) }

// LogValue gives log/slog the same secret-free view as MarshalJSON.
func (e Entry) LogValue() slog.Value {
	attrs := []slog.Attr{
		slog.String("owner", e.Owner),
		slog.String("server", e.Server),
		slog.String("url", e.URL),
		slog.String("client_id", e.ClientID),
		slog.Bool("has_refresh_token", e.RefreshToken != ""),
	}
	if !e.Expiry.IsZero() {
		attrs = append(attrs, slog.Time("expiry", e.Expiry))
	}
	return slog.GroupValue(attrs...)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
