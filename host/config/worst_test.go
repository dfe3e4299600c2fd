package config

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func fill(f func(i int) string) []byte {
	var b strings.Builder
	for i := 0; ; i++ {
		s := f(i)
		if b.Len()+len(s) > maxFileSize {
			return []byte(b.String())
		}
		b.WriteString(s)
	}
}

func TestWorst(t *testing.T) {
	cases := map[string][]byte{
		"valid servers": fill(func(i int) string { return fmt.Sprintf("[mcp_servers.s%d]\ncommand=\"x\"\n", i) }),
		"empty servers": fill(func(i int) string { return fmt.Sprintf("[mcp_servers.s%d]\n", i) }),
		"inline servers": fill(func(i int) string { return fmt.Sprintf("mcp_servers.s%d={command=\"x\"}\n", i) }),
		"nested":        fill(func(i int) string { return fmt.Sprintf("k%d=%s%s\n", i, strings.Repeat("{a=", 9)+"1", strings.Repeat("}", 9)) }),
		"nested dotted": fill(func(i int) string { return fmt.Sprintf("k%d=%s1%s\n", i, strings.Repeat("{a.b.c.d.e.f.g.h.i.j.k=", 9), strings.Repeat("}", 9)) }),
		"dotted":        fill(func(i int) string { return fmt.Sprintf("k%d.a.b.c.d.e.f.g.h.i.j = 1\n", i) }),
		"unknown keys":  fill(func(i int) string { return fmt.Sprintf("[mcp_servers.s%d]\ncommand=\"x\"\nfoo=1\nbar=2\n", i) }),
		"policies":      fill(func(i int) string { return fmt.Sprintf("[[policies]]\npath=\"p%d\"\n", i) }),
	}
	for name, data := range cases {
		start := time.Now()
		cfg, err := ParseConfig("c.toml", data, Origin{})
		n := 0
		if err != nil {
			n = len(err.(Errors))
		}
		t.Logf("%-15s %7d bytes: %v (%d servers, %d errors)", name, len(data), time.Since(start), len(cfg.Servers), n)
		start = time.Now()
		ParseRequirements("r.toml", data)
		ParseEnvironments("e.toml", data)
		t.Logf("%-15s req+env: %v", name, time.Since(start))
	}
}
