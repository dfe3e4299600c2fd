package policy

import (
	"bytes"
	"container/list"
	"hash/maphash"
	"sync"

	"github.com/warden-mcp/warden/abi"
)

// memo is a bounded LRU of hook outputs keyed by (hook, input). Guests are
// deterministic (no clock, randomness or I/O), so equal inputs give equal
// outputs. Only successful outputs are stored. Stored slices are never
// modified; readers must not modify them either.
//
// An entry is found by a seeded 64-bit hash of the input and kept with a
// copy of the input, which a hit must equal byte for byte: hashing is
// ≈20× cheaper than a sha256 (which was a quarter of a policy phase), and a
// hash collision, engineered or not, costs a miss, never a wrong output.
type memo struct {
	mu         sync.Mutex
	seed       maphash.Seed
	maxEntries int
	maxBytes   int
	bytes      int        // input and output bytes held
	ll         *list.List // front = most recently used
	items      map[uint64]*list.Element
}

type memoEntry struct {
	key   uint64
	hook  abi.Hook
	input []byte // the memo's own copy
	out   []byte
}

func newMemo(maxEntries, maxBytes int) *memo {
	return &memo{seed: maphash.MakeSeed(), maxEntries: maxEntries, maxBytes: maxBytes, ll: list.New(), items: make(map[uint64]*list.Element)}
}

// key returns the hash under which (hook, input) is stored.
func (c *memo) key(hook abi.Hook, input []byte) uint64 {
	return maphash.Bytes(c.seed, input) ^ uint64(hook)
}

// get returns the output stored for (hook, input) under key.
func (c *memo) get(key uint64, hook abi.Hook, input []byte) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.items[key]
	if !ok {
		return nil, false
	}
	me := e.Value.(*memoEntry)
	if me.hook != hook || !bytes.Equal(me.input, input) {
		return nil, false // another input with the same hash
	}
	c.ll.MoveToFront(e)
	return me.out, true
}

// put stores out for (hook, input) under key, copying input. An entry of
// another input with the same hash is replaced.
func (c *memo) put(key uint64, hook abi.Hook, input, out []byte) {
	size := len(input) + len(out)
	if size > c.maxBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[key]; ok {
		me := e.Value.(*memoEntry)
		if me.hook == hook && bytes.Equal(me.input, input) {
			c.ll.MoveToFront(e)
			return
		}
		c.remove(e)
	}
	c.items[key] = c.ll.PushFront(&memoEntry{key: key, hook: hook, input: bytes.Clone(input), out: out})
	c.bytes += size
	for c.ll.Len() > c.maxEntries || c.bytes > c.maxBytes {
		c.remove(c.ll.Back())
	}
}

func (c *memo) remove(e *list.Element) {
	me := e.Value.(*memoEntry)
	c.ll.Remove(e)
	delete(c.items, me.key)
	c.bytes -= len(me.input) + len(me.out)
}

func (c *memo) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ll.Len()
}
