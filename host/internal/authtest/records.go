package authtest

// RegisterRecord is one /register request as the server understood it.
type RegisterRecord struct {
	ClientName   string
	RedirectURIs []string
	// AuthMethod is the token_endpoint_auth_method the client asked for ("" if none).
	AuthMethod string
	GrantTypes []string
	// ClientID is the identifier issued, empty when the registration failed.
	ClientID string
	// Error is the OAuth error code answered, empty on success.
	Error string
}

// AuthorizeRecord is one /authorize request.
type AuthorizeRecord struct {
	ClientID            string
	RedirectURI         string
	ResponseType        string
	Scopes              []string
	State               string
	CodeChallengeMethod string
	HasCodeChallenge    bool
	// Resource is the RFC 8707 resource indicator the client sent.
	Resource string
	// MetadataDocument reports whether the client_id was taken as the URL of a client ID
	// metadata document (Options.ClientIDMetadataDocuments) and fetched;
	// MetadataDocumentError says why the document could not be fetched or used (Error
	// is then invalid_client, answered with an error page).
	MetadataDocument      bool
	MetadataDocumentError string
	// ConsentAsked reports whether the request got as far as the consent step;
	// Consent is what was decided there.
	ConsentAsked bool
	Consent      Consent
	// Code is the authorization code issued, empty unless consent approved.
	Code Secret
	// Error is the OAuth error code answered (by redirect or, for an unknown client or
	// redirect URI, by an error page), "abandoned" when the browser went away during a
	// held consent, empty on success.
	Error string
}

// TokenRecord is one /token request.
type TokenRecord struct {
	GrantType   string
	ClientID    string
	RedirectURI string
	// ClientSecretPresent reports whether client_secret was sent; ClientAuthenticated
	// whether the client was authenticated (a public client always is, by its id).
	ClientSecretPresent bool
	ClientAuthenticated bool
	// CodeVerifierPresent reports whether code_verifier was sent, CodeVerifierValid
	// whether it matched the S256 code_challenge of the code.
	CodeVerifierPresent bool
	CodeVerifierValid   bool
	// Scopes are the scopes granted, or requested when the request failed.
	Scopes   []string
	Resource string
	// PresentedRefreshToken is the refresh_token parameter the request sent, recorded
	// whatever the grant and even when the client is unknown.
	PresentedRefreshToken Secret
	// AccessToken and RefreshToken are what was issued, empty on failure.
	AccessToken  Secret
	RefreshToken Secret
	// Error is the OAuth error code answered, empty on success.
	Error string
}

// ResourceRecord is one request a protected resource saw.
type ResourceRecord struct {
	Method string
	Path   string
	// Authorization is the whole Authorization header, Token the bearer token in it.
	Authorization Secret
	Token         Secret
	// Status is the wrapper's own answer (401, 403), or 0 when the request passed to the
	// MCP handler.
	Status int
	// Error is the RFC 6750 error code of a rejection ("" for a missing token or a pass).
	Error string
}

// maxRecords caps each record list; the oldest entries go first.
const maxRecords = 4096

func appendRecord[T any](list []T, r T) []T {
	if len(list) >= maxRecords {
		list = append(list[:0], list[1:]...)
	}
	return append(list, r)
}
