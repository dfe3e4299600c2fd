package policy

import (
	"container/list"
	"crypto/sha256"
	"sync"

	"github.com/warden-mcp/warden/abi"
)

// memo is a bounded LRU of hook outputs keyed by sha256(hook, input). Guests
// are deterministic (no clock, randomness or I/O), so equal inputs give
// equal outputs. Only successful outputs are stored. Stored slices are never
// modified; readers must not modify them either.
type memo struct {
	mu         sync.Mutex
	maxEntries int
	maxBytes   int
	bytes      int
	ll         *list.List // front = most recently used
	items      map[[32]byte]*list.Element
}

type memoEntry struct {
	key [32]byte
	out []byte
}

func newMemo(maxEntries, maxBytes int) *memo {
	return &memo{maxEntries: maxEntries, maxBytes: maxBytes, ll: list.New(), items: make(map[[32]byte]*list.Element)}
}

func memoKey(hook abi.Hook, input []byte) [32]byte {
	h := sha256.New()
	var hb [4]byte
	hb[0], hb[1], hb[2], hb[3] = byte(hook), byte(hook>>8), byte(hook>>16), byte(hook>>24)
	h.Write(hb[:])
	h.Write(input)
	var k [32]byte
	h.Sum(k[:0])
	return k
}

func (c *memo) get(key *[32]byte) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.items[*key]
	if !ok {
		return nil, false
	}
	c.ll.MoveToFront(e)
	return e.Value.(*memoEntry).out, true
}

func (c *memo) put(key *[32]byte, out []byte) {
	if len(out) > c.maxBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[*key]; ok {
		c.ll.MoveToFront(e)
		return
	}
	c.items[*key] = c.ll.PushFront(&memoEntry{key: *key, out: out})
	c.bytes += len(out)
	for c.ll.Len() > c.maxEntries || c.bytes > c.maxBytes {
		e := c.ll.Back()
		me := e.Value.(*memoEntry)
		c.ll.Remove(e)
		delete(c.items, me.key)
		c.bytes -= len(me.out)
	}
}

func (c *memo) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ll.Len()
}
