package leaktest

import "github.com/warden-mcp/warden/host/executor/protocol"

// StripHeaderEnvVars is a ToUpstream rewrite that plays a legacy executor which does not
// know header references: it removes valueEnvVar from every header of an http/request
// (leaving name, value and valuePrefix as they were), so the executor sees a header
// without a value where the host asked for one resolved from the executor's environment.
func StripHeaderEnvVars(msg map[string]any) (map[string]any, bool) {
	if msg["method"] != protocol.MethodHTTPRequest {
		return msg, true
	}
	params, _ := msg["params"].(map[string]any)
	headers, _ := params["headers"].([]any)
	for _, h := range headers {
		if h, ok := h.(map[string]any); ok {
			delete(h, "valueEnvVar")
		}
	}
	return msg, true
}

// Downgrade is a ToDownstream rewrite that plays an older executor: from an initialize
// result it removes capabilities.httpHeaderEnvVars and environmentInfo, leaving every
// other field. An initialize result is recognised by its shape — a result object with
// sessionId and protocolVersion — since the rewrite sees one message at a time; other
// messages pass unchanged.
func Downgrade(msg map[string]any) (map[string]any, bool) {
	result, ok := msg["result"].(map[string]any)
	if !ok {
		return msg, true
	}
	_, hasSession := result["sessionId"]
	_, hasVersion := result["protocolVersion"]
	if !hasSession || !hasVersion {
		return msg, true
	}
	delete(result, "environmentInfo")
	if caps, ok := result["capabilities"].(map[string]any); ok {
		delete(caps, "httpHeaderEnvVars")
	}
	return msg, true
}

// Chain runs rewrites in order; the first that drops the message ends the chain. Nil
// entries are skipped.
func Chain(rewrites ...Rewrite) Rewrite {
	return func(msg map[string]any) (map[string]any, bool) {
		for _, r := range rewrites {
			if r == nil {
				continue
			}
			var keep bool
			if msg, keep = r(msg); !keep {
				return nil, false
			}
		}
		return msg, true
	}
}
