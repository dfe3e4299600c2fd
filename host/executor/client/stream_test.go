package client

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/warden-mcp/warden/host/internal/testmain"
)

func TestStream(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name    string
		limit   int
		pushes  []string
		end     error
		want    string
		wantErr error
	}{
		{"data then EOF", 10, []string{"ab", "cd"}, io.EOF, "abcd", io.EOF},
		{"failure drops unread data", 10, []string{"ab"}, boom, "", boom},
		{"overflow fails the stream", 3, []string{"ab", "cd"}, nil, "", ErrStreamOverflow},
		{"exactly the limit", 4, []string{"ab", "cd"}, io.EOF, "abcd", io.EOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStream("test", tt.limit)
			for _, p := range tt.pushes {
				s.push([]byte(p))
			}
			if tt.end != nil {
				s.fail(tt.end)
			}
			var got []byte
			buf := make([]byte, 3)
			var err error
			for {
				var n int
				n, err = s.read(context.Background(), buf)
				got = append(got, buf[:n]...)
				if err != nil {
					break
				}
			}
			if string(got) != tt.want || !errors.Is(err, tt.wantErr) {
				t.Errorf("read %q, %v; want %q, %v", got, err, tt.want, tt.wantErr)
			}
			if s.push([]byte("x")) {
				t.Error("push after the end succeeded")
			}
		})
	}
}

func TestStreamReadHonoursCtx(t *testing.T) {
	s := newStream("test", 10)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.read(ctx, make([]byte, 1)); !errors.Is(err, context.Canceled) {
		t.Errorf("read on a done ctx: %v", err)
	}
}

func TestLineLogger(t *testing.T) {
	tests := []struct {
		name   string
		writes []string
		want   []string
	}{
		{"lines", []string{"one\ntwo\n"}, []string{"line=one", "line=two"}},
		{"split writes", []string{"on", "e\r\n"}, []string{"line=one"}},
		{"long line cut", []string{strings.Repeat("x", 10) + "\n"}, []string{"line=xxxxxxxx", "line=xx"}},
		{"no newline is held", []string{"partial"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			buf := &testmain.SyncBuffer{}
			l := &lineLogger{log: hclog.New(&hclog.LoggerOptions{Output: buf}), max: 8}
			for _, w := range tt.writes {
				if n, err := l.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
			if tt.want == nil {
				if buf.String() != "" {
					t.Errorf("logged %q, want nothing yet", buf.String())
				}
				return
			}
			if len(lines) != len(tt.want) {
				t.Fatalf("logged %q, want %d lines", buf.String(), len(tt.want))
			}
			for i, w := range tt.want {
				if !strings.HasSuffix(lines[i], w) {
					t.Errorf("line %d = %q, want suffix %q", i, lines[i], w)
				}
			}
		})
	}
}
