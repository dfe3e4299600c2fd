// Package netguard holds the checks warden's network listeners share (the host API's
// WebSocket and the MCP front door): loopback by default, a bearer token otherwise.
package netguard

import (
	"crypto/sha256"
	"crypto/subtle"
	"net"
	"strings"
)

// ValidBearer reports whether an Authorization header carries token as a bearer
// credential. Both sides are hashed first and compared in constant time, so the time
// depends on neither the token's value nor its length.
func ValidBearer(header, token string) bool {
	scheme, cred, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(cred)))
	want := sha256.Sum256([]byte(token))
	return subtle.ConstantTimeCompare(got[:], want[:]) == 1
}

// HostOnly strips the port (and IPv6 brackets) from a host[:port].
func HostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]")
}

// IsLoopbackHost reports whether host is "localhost" or a loopback IP (127.0.0.0/8, ::1).
func IsLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
