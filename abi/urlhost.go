package abi

import "strings"

// URLHost returns the host of rawurl without port, userinfo or IPv6
// brackets, as a substring of rawurl (no allocation, case preserved):
//
//	URLHost("https://user@API.Example.com:8443/mcp") == "API.Example.com"
//	URLHost("http://[::1]:7777/mcp")                  == "::1"
//
// The authority ends at the first '/', '?', '#' or '\' (browsers treat '\'
// as '/'), and the host follows the last '@' in it, so
// "http://good.com@evil.com/" yields "evil.com". A string without "://" is
// parsed as if it started with the authority. The result is "" when there is
// no host.
//
// This is the definition of the url_host slot of a flat Server record: the
// host computes it from the server's URL, so that a policy gets the host
// without parsing the URL (sdk.URLHost is the same function for any string).
func URLHost(rawurl string) string {
	i, j := urlHostSpan(rawurl)
	return rawurl[i:j]
}

// urlHostSpan returns the bounds of URLHost(rawurl) in rawurl.
func urlHostSpan(rawurl string) (int, int) {
	s, off := rawurl, 0
	if i := strings.Index(s, "://"); i >= 0 {
		s, off = s[i+3:], i+3
	} else if strings.HasPrefix(s, "//") {
		s, off = s[2:], 2
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '/' || c == '?' || c == '#' || c == '\\' {
			s = s[:i]
			break
		}
	}
	if i := strings.LastIndexByte(s, '@'); i >= 0 {
		s, off = s[i+1:], off+i+1
	}
	if strings.HasPrefix(s, "[") {
		if i := strings.IndexByte(s, ']'); i >= 0 {
			return off + 1, off + i
		}
		return off, off
	}
	if i := strings.IndexByte(s, ':'); i >= 0 {
		s = s[:i]
	}
	return off, off + len(s)
}
