package policy

import (
	"testing"

	"github.com/warden-mcp/warden/abi"
)

// TestMemoCache checks the memo's contract: a hit needs the same hook and the
// same input bytes (a hash collision is a miss, and storing the colliding
// input replaces the entry), the memo keeps its own copy of the input, and
// both bounds count inputs and outputs.
func TestMemoCache(t *testing.T) {
	a, b := []byte("input a"), []byte("input b")
	t.Run("hit", func(t *testing.T) {
		c := newMemo(4, 1<<10)
		k := c.key(abi.HookServers, a)
		c.put(k, abi.HookServers, a, []byte("out a"))
		a[0] = 'X' // the caller reuses its buffer
		if _, ok := c.get(k, abi.HookServers, a); ok {
			t.Fatal("hit for changed input bytes")
		}
		a[0] = 'i'
		if out, ok := c.get(k, abi.HookServers, a); !ok || string(out) != "out a" {
			t.Fatalf("get = %q, %v; want the stored output", out, ok)
		}
		if _, ok := c.get(c.key(abi.HookCredentials, a), abi.HookCredentials, a); ok {
			t.Fatal("hit for another hook")
		}
	})
	t.Run("collision", func(t *testing.T) {
		c := newMemo(4, 1<<10)
		const k = 42 // both inputs under one hash
		c.put(k, abi.HookServers, a, []byte("out a"))
		if _, ok := c.get(k, abi.HookServers, b); ok {
			t.Fatal("hit for another input with the same hash")
		}
		c.put(k, abi.HookServers, b, []byte("out b"))
		if out, ok := c.get(k, abi.HookServers, b); !ok || string(out) != "out b" {
			t.Fatalf("get(b) = %q, %v", out, ok)
		}
		if _, ok := c.get(k, abi.HookServers, a); ok {
			t.Fatal("the replaced entry still hits")
		}
		if c.len() != 1 || c.bytes != len(b)+len("out b") {
			t.Fatalf("len %d, bytes %d after replacing", c.len(), c.bytes)
		}
	})
	t.Run("bounds", func(t *testing.T) {
		c := newMemo(2, 40) // each entry below is 7+10 = 17 bytes
		for i, in := range []string{"input 1", "input 2", "input 3"} {
			c.put(uint64(i), abi.HookServers, []byte(in), []byte("output ..."))
		}
		if c.len() != 2 || c.bytes != 34 {
			t.Fatalf("len %d, bytes %d; want 2 entries of 17 bytes", c.len(), c.bytes)
		}
		if _, ok := c.get(0, abi.HookServers, []byte("input 1")); ok {
			t.Fatal("the least recently used entry was not evicted")
		}
		c.put(9, abi.HookServers, []byte("in"), make([]byte, 39)) // over maxBytes with its input
		if _, ok := c.get(9, abi.HookServers, []byte("in")); ok || c.len() != 2 {
			t.Fatalf("an entry over MemoMaxBytes was stored (len %d)", c.len())
		}
	})
}
