package main

import (
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseOptions(t *testing.T) {
	env := fakeEnv(map[string]string{"TOKEN": "tok-secret", "KEY": "key-secret", "EMPTY": ""})
	tests := []struct {
		name    string
		args    []string
		want    options
		wantErr string // substring; empty means success
	}{
		{name: "defaults", args: nil, want: options{name: "warden-example"}},
		{name: "stdio", args: []string{"--stdio"}, want: options{name: "warden-example"}},
		{name: "http with everything", args: []string{
			"--http", "127.0.0.1:0", "--name", "srv", "--require-bearer-env", "TOKEN",
			"--require-header", "x-api-key=KEY", "--startup-delay", "1s", "--first-response-delay", "2s",
			"--tools", "echo, add,echo", "--count-file", "/tmp/c", "--log-level", "debug",
			"--protocol-versions", "2025-11-25,2025-06-18", "--stateless",
		}, want: options{
			httpAddr: "127.0.0.1:0", name: "srv", tools: []string{"echo", "add"},
			protocolVersions: []string{"2025-11-25", "2025-06-18"}, stateless: true,
			requirements: []headerRequirement{
				{header: "Authorization", envVar: "TOKEN", bearer: true, value: "tok-secret"},
				{header: "X-Api-Key", envVar: "KEY", value: "key-secret"},
			},
			startupDelay: time.Second, firstResponseDelay: 2 * time.Second,
			countFile: "/tmp/c", logLevel: slog.LevelDebug,
		}},
		{name: "items", args: []string{"--items"}, want: options{name: "warden-example", items: true}},
		{name: "tools none", args: []string{"--tools", "none"}, want: options{name: "warden-example", tools: []string{}}},
		{name: "tools all", args: []string{"--tools", "all"}, want: options{name: "warden-example"}},
		{name: "startup delay works for stdio", args: []string{"--startup-delay", "5ms"}, want: options{name: "warden-example", startupDelay: 5 * time.Millisecond}},
		{name: "stdio and http", args: []string{"--stdio", "--http", ":0"}, wantErr: "mutually exclusive"},
		{name: "unknown tool", args: []string{"--tools", "echo,nope"}, wantErr: "unknown tool: nope"},
		{name: "bearer without http", args: []string{"--require-bearer-env", "TOKEN"}, wantErr: "need --http"},
		{name: "header without http", args: []string{"--require-header", "X=KEY"}, wantErr: "need --http"},
		{name: "first delay without http", args: []string{"--first-response-delay", "1s"}, wantErr: "need --http"},
		{name: "bearer env unset", args: []string{"--http", ":0", "--require-bearer-env", "NOPE"}, wantErr: "NOPE is not set"},
		{name: "bearer env empty", args: []string{"--http", ":0", "--require-bearer-env", "EMPTY"}, wantErr: "EMPTY is not set or empty"},
		{name: "header malformed", args: []string{"--http", ":0", "--require-header", "X-Key"}, wantErr: "want NAME=ENVVAR"},
		{name: "header env unset", args: []string{"--http", ":0", "--require-header", "X-Key=NOPE"}, wantErr: "NOPE is not set"},
		{name: "bad protocol version", args: []string{"--protocol-versions", "1999-01-01"}, wantErr: "is not one of"},
		{name: "bad log level", args: []string{"--log-level", "loud"}, wantErr: "--log-level"},
		{name: "negative delay", args: []string{"--startup-delay", "-1s"}, wantErr: "negative"},
		{name: "empty name", args: []string{"--name", ""}, wantErr: "--name"},
		{name: "positional args", args: []string{"extra"}, wantErr: "unexpected arguments"},
		{name: "unknown flag", args: []string{"--bogus"}, wantErr: "bogus"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseOptions(tt.args, env, io.Discard)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want containing %q", err, tt.wantErr)
				}
				if !errors.Is(err, errUsage) {
					t.Errorf("err = %v, want it to wrap errUsage", err)
				}
				for _, secret := range []string{"tok-secret", "key-secret"} {
					if strings.Contains(err.Error(), secret) {
						t.Errorf("error leaks a secret: %v", err)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(options{}, headerRequirement{})); diff != "" {
				t.Errorf("options (-want +got):\n%s", diff)
			}
		})
	}
}
