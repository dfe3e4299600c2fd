// Package metrics is warden's Prometheus instrumentation: one registry per host (never the
// process-global default one, so that two hosts in one process, or a host embedded in a
// program with metrics of its own, do not collide) holding the series an operator watches:
//
//	warden_policy_latency_seconds{plugin,hook}        histogram of policy hook calls
//	warden_decisions_total{hook,outcome}              composed decisions
//	warden_tool_calls_total{server,outcome}           tool calls: ok, tool_error, denied, failed
//	                                                  (server "(unlisted)": a name no thread lists)
//	warden_upstream_restarts_total{server}            restarts of MCP servers that were up
//	warden_executor_reconnects_total{environment}     executor reconnections
//	warden_open_sessions                              open shared MCP sessions
//	warden_threads                                    running threads
//
// plus the Go runtime and process collectors. Label values are names from the
// configuration (plugin ids, hook names, server names, executor ids) and fixed outcome
// words: never a secret, an argument or a URL.
//
// The package exposes plain methods; the host calls them from the callbacks its parts
// offer (decision.Options.Observe, thread.Options.OnToolCall, mcpconn.Options.OnRestart),
// so that no other package imports Prometheus.
package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Options configures New. Nil gauges read as 0.
type Options struct {
	// OpenSessions reports the number of open shared MCP sessions, read at each scrape.
	OpenSessions func() int
	// Threads reports the number of running threads, read at each scrape.
	Threads func() int
}

// Metrics is one host's registry and its series. Every method is safe for concurrent use and
// cheap enough for the request path (a labelled counter increment).
type Metrics struct {
	reg *prometheus.Registry

	policyLatency *prometheus.HistogramVec
	decisions     *prometheus.CounterVec
	toolCalls     *prometheus.CounterVec
	restarts      *prometheus.CounterVec
	reconnects    *prometheus.CounterVec
}

// PolicyLatencyBuckets are the histogram buckets of warden_policy_latency_seconds: a warm
// wasm hook answers in microseconds, a cold or pathological one up to its timeout (1 s by
// default), so the buckets span 10 µs to 2.5 s.
var PolicyLatencyBuckets = []float64{10e-6, 25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 500e-3, 1, 2.5}

// New returns a registry with warden's series and the Go runtime and process collectors.
func New(o Options) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		policyLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "warden", Name: "policy_latency_seconds",
			Help:    "Duration of policy plugin hook calls, by plugin and hook.",
			Buckets: PolicyLatencyBuckets,
		}, []string{"plugin", "hook"}),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "warden", Name: "decisions_total",
			Help: "Composed policy decisions, by hook and outcome (expose, hide, disable; allow, ask, deny; local, executor; pass, rewrite, error).",
		}, []string{"hook", "outcome"}),
		toolCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "warden", Name: "tool_calls_total",
			Help: "Tool calls through threads, by server and outcome (ok, tool_error, denied, failed).",
		}, []string{"server", "outcome"}),
		restarts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "warden", Name: "upstream_restarts_total",
			Help: "Restarts of MCP server connections that had been ready, by server.",
		}, []string{"server"}),
		reconnects: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "warden", Name: "executor_reconnects_total",
			Help: "Reconnections of executors after their first connect, by environment.",
		}, []string{"environment"}),
	}
	gauge := func(name, help string, f func() int) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "warden", Name: name, Help: help}, func() float64 {
			if f == nil {
				return 0
			}
			return float64(f())
		})
	}
	m.reg.MustRegister(m.policyLatency, m.decisions, m.toolCalls, m.restarts, m.reconnects,
		gauge("open_sessions", "Open shared MCP server sessions.", o.OpenSessions),
		gauge("threads", "Running threads.", o.Threads),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}

// Registry is the host's registry (to add collectors of an embedding program, or to gather
// in tests).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the Prometheus exposition formats. It does not
// authenticate: mount it behind the listener's guard (host/ui does).
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// PolicyCall records one policy hook call of plugin (its id) that took d.
func (m *Metrics) PolicyCall(plugin, hook string, d time.Duration) {
	m.policyLatency.WithLabelValues(plugin, hook).Observe(d.Seconds())
}

// Decision counts one composed decision.
func (m *Metrics) Decision(hook, outcome string) { m.decisions.WithLabelValues(hook, outcome).Inc() }

// ToolCall counts one finished tool call to server.
func (m *Metrics) ToolCall(server, outcome string) {
	m.toolCalls.WithLabelValues(server, outcome).Inc()
}

// UpstreamRestart counts one restart of a connection to server.
func (m *Metrics) UpstreamRestart(server string) { m.restarts.WithLabelValues(server).Inc() }

// ExecutorReconnect counts one reconnection of the executor of environment.
func (m *Metrics) ExecutorReconnect(environment string) {
	m.reconnects.WithLabelValues(environment).Inc()
}
