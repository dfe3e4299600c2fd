package oauth

import (
	"path/filepath"

	"github.com/fsnotify/fsnotify"

	"github.com/warden-mcp/warden/host/oauth/store"
)

// waitFor records that a connection of k failed for want of a usable login; refused is
// the access token the server refused ("" when there was none). A later login of k — in
// this process or another, such as `warden oauth login` — is reported to
// Options.OnLogin.
func (m *Manager) waitFor(k store.Key, refused string) {
	if m.o.OnLogin == nil {
		return
	}
	m.mu.Lock()
	m.waiting[k] = refused
	m.mu.Unlock()
}

// watch follows the store file's directory: another process's login replaces the file.
func (m *Manager) watch() error {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	path := m.o.Store.Path()
	if err := fw.Add(filepath.Dir(path)); err != nil {
		_ = fw.Close()
		return err
	}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		defer fw.Close()
		for {
			select {
			case <-m.ctx.Done():
				return
			case ev, ok := <-fw.Events:
				if !ok {
					return
				}
				if filepath.Clean(ev.Name) == filepath.Clean(path) && ev.Op&(fsnotify.Create|fsnotify.Write|fsnotify.Rename) != 0 {
					m.checkWaiting()
				}
			case _, ok := <-fw.Errors:
				if !ok {
					return
				}
			}
		}
	}()
	return nil
}

// checkWaiting reports every waiting key that now has a login with a token other than
// the refused one.
func (m *Manager) checkWaiting() {
	m.mu.Lock()
	waiting := make(map[store.Key]string, len(m.waiting))
	for k, v := range m.waiting {
		waiting[k] = v
	}
	m.mu.Unlock()
	for k, refused := range waiting {
		e, ok, err := m.o.Store.Get(m.ctx, k)
		if err != nil || !ok || e.AccessToken == "" || e.AccessToken == refused {
			continue
		}
		m.mu.Lock()
		_, still := m.waiting[k]
		delete(m.waiting, k)
		delete(m.expired, k)
		m.mu.Unlock()
		if still {
			m.log.Info("OAuth login found in the store", "owner", k.Owner, "server", k.Server)
			m.o.OnLogin(k)
		}
	}
}
