package frontdoor

import (
	"maps"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// newRevision is the first revision without the initialize handshake, whose requests
// carry their protocol version and client capabilities in _meta.
const newRevision = "2026-07-28"

// sessionRevision is the protocol revision a client session speaks ("" before its first
// request).
func sessionRevision(s mcp.Session) string {
	ss, ok := s.(*mcp.ServerSession)
	if !ok {
		return ""
	}
	if ip := ss.InitializeParams(); ip != nil {
		return ip.ProtocolVersion
	}
	return ""
}

// legacySession reports whether s speaks a revision before 2026-07-28.
func legacySession(s mcp.Session) bool {
	v := sessionRevision(s)
	return v != "" && v < newRevision
}

// forSession removes from a result what a session of an older revision must not see:
// upstream results pass through unchanged, and one from a 2026-07-28 server carries that
// revision's resultType and io.modelcontextprotocol/ _meta keys (its serverInfo).
func forSession(s mcp.Session, res mcp.Result) mcp.Result {
	if res == nil || !legacySession(s) {
		return res
	}
	switch r := res.(type) {
	case *mcp.CallToolResult:
		if r == nil {
			return res
		}
		// resultType is unexported here: a fresh value has none. InputRequests and
		// RequestState are 2026-07-28 only too.
		return &mcp.CallToolResult{Meta: legacyMeta(r.Meta), Content: r.Content,
			StructuredContent: r.StructuredContent, IsError: r.IsError}
	case *mcp.ReadResourceResult:
		if r == nil {
			return res
		}
		// Cacheable (ttlMs, cacheScope) is 2026-07-28's too.
		return &mcp.ReadResourceResult{Meta: legacyMeta(r.Meta), Contents: r.Contents}
	case *mcp.GetPromptResult:
		if r == nil {
			return res
		}
		return &mcp.GetPromptResult{Meta: legacyMeta(r.Meta), Description: r.Description, Messages: r.Messages}
	case *mcp.CompleteResult:
		if r == nil {
			return res
		}
		c := *r
		c.Meta, c.ResultType = legacyMeta(r.Meta), ""
		return &c
	}
	return res
}

// legacyMeta is m without the keys of the 2026-07-28 revision's namespace.
func legacyMeta(m mcp.Meta) mcp.Meta {
	for k := range m {
		if strings.HasPrefix(k, "io.modelcontextprotocol/") {
			out := maps.Clone(m)
			maps.DeleteFunc(out, func(k string, _ any) bool { return strings.HasPrefix(k, "io.modelcontextprotocol/") })
			if len(out) == 0 {
				return nil
			}
			return out
		}
	}
	return m
}
