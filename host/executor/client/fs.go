package client

import (
	"context"
	"fmt"

	"github.com/warden-mcp/warden/host/executor/protocol"
)

// MaxFileBytes is the largest file ReadFile reads.
const MaxFileBytes = protocol.MaxMessageBytes/4*3 - 64<<10

// ReadFile reads path, relative to root, in the executor's filesystem with fs/read, at
// most max bytes (0, or more than MaxFileBytes, is MaxFileBytes: base64 and the envelope
// of the answer must fit in one protocol message, which is smaller than
// protocol.MaxReadBytes). A
// missing file is ErrNotFound; a path outside root, a file that is not regular, or an
// executor without the fsRead capability is ErrForbidden; a file over max is ErrFailed.
func (c *Client) ReadFile(ctx context.Context, root, path string, max int64) ([]byte, error) {
	method := protocol.MethodFSRead
	if max <= 0 || max > MaxFileBytes {
		max = MaxFileBytes
	}
	if !c.Capabilities().FSRead {
		if _, err := c.current(method); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("executor %q: %s %s: %w: the executor does not offer fsRead", c.cfg.Name, method, path, ErrForbidden)
	}
	var res protocol.FSReadResult
	if err := c.call(ctx, method, protocol.FSReadParams{Root: root, Path: path, MaxBytes: max}, &res); err != nil {
		return nil, fmt.Errorf("%w (root %s, path %s)", err, root, path)
	}
	if int64(len(res.Data)) > max {
		return nil, fmt.Errorf("executor %q: %s %s: %w: %d bytes returned for a limit of %d", c.cfg.Name, method, path, ErrProtocol, len(res.Data), max)
	}
	return res.Data, nil
}
