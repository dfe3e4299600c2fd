package thread

import (
	"context"
	"fmt"

	"github.com/warden-mcp/warden/host/roots"
)

// Reload re-reads the configuration and plugins (Options.Load) and queues a refresh for every
// thread (config/mcpServer/reload). Each thread's candidate set is rebuilt against the new
// configuration — its selected roots found again, roots outside the watched dirs re-read
// from disk — and the refresh is applied lazily, before the thread's next Status or
// CallTool, as Codex does.
//
// Strict (as Codex's queue_strict_refresh): every thread is planned before anything is
// queued; if the configuration files have errors, or any thread's configuration fails to
// load (for example its selected plugin root is now broken), Reload returns a *ReloadError
// naming that thread (or the config error) and changes nothing.
//
// Best-effort: the valid part of the files is used (their errors are in
// ReloadResult.ConfigErr), every thread that can be refreshed is, and the others are
// reported in ReloadResult.Failed and keep their current servers.
//
// Either way new threads use the new configuration once Reload returns successfully.
func (m *Manager) Reload(ctx context.Context, strict bool) (ReloadResult, error) {
	res, snap, err := m.reload(ctx, strict)
	if err == nil && m.onSnapshot != nil {
		m.onSnapshot(snap) // after configMu is released: the hook may wait for UpdateRoots
	}
	return res, err
}

func (m *Manager) reload(ctx context.Context, strict bool) (ReloadResult, *Snapshot, error) {
	m.configMu.Lock()
	defer m.configMu.Unlock()
	if _, err := m.current(); err != nil {
		return ReloadResult{}, nil, fmt.Errorf("reload: %w", err)
	}
	snap, err := m.load(ctx)
	if err != nil {
		return ReloadResult{}, nil, fmt.Errorf("reload: %w", err)
	}
	if strict && snap.ConfigErr != nil {
		return ReloadResult{}, nil, fmt.Errorf("reload: %w", snap.ConfigErr)
	}
	res := ReloadResult{ConfigErr: snap.ConfigErr}
	plans, err := m.replan(snap, true, func(t *Thread, err error) error {
		rerr := &ReloadError{ThreadID: t.id, Err: err}
		if strict {
			return fmt.Errorf("reload: %w", rerr)
		}
		m.log.Warn("thread keeps its servers: its configuration failed to load", "thread", t.id, "error", err)
		res.Failed = append(res.Failed, rerr)
		return nil
	})
	if err != nil {
		return ReloadResult{}, nil, err
	}
	m.mu.Lock()
	m.snap = snap
	m.mu.Unlock()
	m.applyLimits(snap)
	// Policies first: a refresh must never run before its roots' policies are installed.
	m.syncPolicies(ctx, outOfSet(plans))
	for _, pl := range plans {
		pl.t.setPending(pl.p)
		res.Refreshed = append(res.Refreshed, pl.t.id)
	}
	m.log.Info("configuration reloaded", "strict", strict, "refreshed", len(res.Refreshed), "failed", len(res.Failed))
	return res, snap, nil
}

// UpdateRoots adopts a new set of watched roots (a roots.Watcher snapshot): the policies
// of changed roots are reloaded, and every thread whose selected roots changed (content,
// policy, appearance or disappearance) gets a refresh queued, applied before its next Status
// or CallTool. A thread whose selected root is now broken or gone keeps its servers (the
// failure is logged; a Reload reports it). A set identical to the current one does nothing.
func (m *Manager) UpdateRoots(ctx context.Context, set *roots.Set) {
	if set == nil {
		return
	}
	m.configMu.Lock()
	defer m.configMu.Unlock()
	m.mu.Lock()
	if m.closed || (m.snap.Roots != nil && m.snap.Roots.Fingerprint() == set.Fingerprint()) {
		m.mu.Unlock()
		return
	}
	snap := *m.snap
	snap.Roots = set
	m.mu.Unlock()

	all, _ := m.replan(&snap, false, func(t *Thread, err error) error {
		m.log.Warn("thread keeps its servers: a selected capability root changed and cannot be used", "thread", t.id, "error", err)
		return nil
	})
	var plans []planned
	for _, pl := range all {
		if pl.prev == nil || pl.prev.rootFP != pl.p.rootFP {
			plans = append(plans, pl)
		}
	}
	m.mu.Lock()
	m.snap = &snap
	m.mu.Unlock()
	m.syncPolicies(ctx, nil)
	for _, pl := range plans {
		pl.t.setPending(pl.p)
		m.log.Debug("capability roots changed: thread refresh queued", "thread", pl.t.id)
	}
}

// ExecutorsChanged re-plans every thread against the current configuration after an
// executor connected, dropped or announced different capabilities or servers (what
// Options.Executors reports now): a refresh is queued for each thread, applied before its
// next Status or CallTool, so that servers routed to a dropped executor turn failed, come
// back after it reconnects, and are checked again against the capabilities it announces
// now. Roots are not re-read.
func (m *Manager) ExecutorsChanged(ctx context.Context) { m.refreshAll(ctx, "an executor change") }

// refreshAll queues a refresh of every thread against the current snapshot: servers whose
// start failed start again, the rest keep their sessions.
func (m *Manager) refreshAll(ctx context.Context, why string) {
	m.configMu.Lock()
	defer m.configMu.Unlock()
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	snap := m.snap
	m.mu.Unlock()
	plans, _ := m.replan(snap, false, func(t *Thread, err error) error {
		m.log.Warn("thread keeps its servers: it cannot be re-planned after "+why, "thread", t.id, "error", err)
		return nil
	})
	m.syncPolicies(ctx, outOfSet(plans))
	for _, pl := range plans {
		pl.t.setPending(pl.p)
	}
	m.log.Debug("thread refreshes queued", "after", why, "threads", len(plans))
}

// planned is one thread's new plan and the one it replaces (its latest, or nil).
type planned struct {
	t       *Thread
	p, prev *plan
}

// replan builds a plan against snap for every thread (reload: roots loaded from their
// path are read again). A thread whose plan fails is given to fail, which skips it
// (nil) or aborts the whole replan with its error.
func (m *Manager) replan(snap *Snapshot, reload bool, fail func(*Thread, error) error) ([]planned, error) {
	var plans []planned
	for _, t := range m.all() {
		t.mu.Lock()
		prev := t.latest
		t.mu.Unlock()
		p, err := m.buildPlan(snap, t, prev, reload)
		if err != nil {
			if ferr := fail(t, err); ferr != nil {
				return nil, ferr
			}
			continue
		}
		plans = append(plans, planned{t: t, p: p, prev: prev})
	}
	return plans, nil
}

// outOfSet is the roots the plans selected outside the watched set (see plan.outOfSet).
func outOfSet(plans []planned) []*roots.Root {
	var out []*roots.Root
	for _, pl := range plans {
		out = append(out, pl.p.outOfSet()...)
	}
	return out
}
