package executor

import (
	"encoding/json"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/warden-mcp/warden/host/executor/protocol"
	"github.com/warden-mcp/warden/host/internal/safefile"
)

// fsRead reads one regular file under a root, confined to it: the path is relative, has
// no ".." element, and its resolved location (symlinks followed) stays inside the
// resolved root; the file is read by safefile (no blocking open, fstat on the descriptor
// read, a byte cap).
func fsRead(raw json.RawMessage) (any, func(), *protocol.Error) {
	var p protocol.FSReadParams
	if e := decodeParams(raw, &p); e != nil {
		return nil, nil, e
	}
	switch {
	case p.Root == "":
		return nil, nil, invalidParams("params.root: missing")
	case !filepath.IsAbs(p.Root):
		return nil, nil, forbidden("fs/read: root %q is not absolute", p.Root)
	case p.Path == "":
		return nil, nil, invalidParams("params.path: missing")
	case p.MaxBytes < 0:
		return nil, nil, invalidParams("params.maxBytes: negative")
	case filepath.IsAbs(p.Path) || strings.HasPrefix(p.Path, "/"):
		return nil, nil, forbidden("fs/read %s: path %q is absolute; want a path relative to the root", p.Root, p.Path)
	case strings.ContainsRune(p.Path, 0) || strings.ContainsRune(p.Root, 0):
		return nil, nil, invalidParams("params.path: contains a NUL byte")
	}
	for _, el := range strings.FieldsFunc(p.Path, func(r rune) bool { return r == '/' || r == filepath.Separator }) {
		if el == ".." {
			return nil, nil, forbidden("fs/read %s: path %q has a \"..\" element", p.Root, p.Path)
		}
	}
	max := int64(protocol.MaxReadBytes)
	if p.MaxBytes > 0 && p.MaxBytes < max {
		max = p.MaxBytes
	}
	root, err := filepath.EvalSymlinks(p.Root)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, notFound("fs/read: root %s does not exist", p.Root)
		}
		return nil, nil, failed("fs/read: root %s: %v", p.Root, err)
	}
	full, err := filepath.EvalSymlinks(filepath.Join(root, p.Path))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, notFound("fs/read %s: %s does not exist", p.Root, p.Path)
		}
		return nil, nil, failed("fs/read %s: %s: %v", p.Root, p.Path, err)
	}
	if rel, err := filepath.Rel(root, full); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return nil, nil, forbidden("fs/read %s: %s resolves outside the root", p.Root, p.Path)
	}
	data, err := safefile.ReadFile(full, max)
	switch {
	case err == nil:
		return protocol.FSReadResult{Data: data, Size: int64(len(data))}, nil, nil
	case errors.Is(err, safefile.ErrNotRegular):
		return nil, nil, forbidden("fs/read %s: %s: %v", p.Root, p.Path, errors.Unwrap(err))
	case errors.Is(err, safefile.ErrTooLarge):
		return nil, nil, failed("fs/read %s: %s: %v", p.Root, p.Path, errors.Unwrap(err))
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil, notFound("fs/read %s: %s does not exist", p.Root, p.Path)
	case errors.Is(err, fs.ErrPermission):
		return nil, nil, forbidden("fs/read %s: %s: permission denied", p.Root, p.Path)
	}
	return nil, nil, failed("fs/read %s: %s: %v", p.Root, p.Path, err)
}
