//go:build !wasip1

package sdk

import (
	"io"
	"strings"
	"testing"
)

// swapLog sends native Log lines to w and returns the function that
// restores the previous writer.
func swapLog(w io.Writer) func() {
	saved := logOutput
	SetLogOutput(w)
	return func() { SetLogOutput(saved) }
}

// TestLog checks the native Log: parts joined into one line.
func TestLog(t *testing.T) {
	var b strings.Builder
	defer swapLog(&b)()
	Log(LogWarn, "a", "b", "c")
	Log(LogDebug)
	if got, want := b.String(), "warden policy warn: abc\nwarden policy debug: \n"; got != want {
		t.Fatalf("log %q, want %q", got, want)
	}
}

// TestSetLogLevel checks that native Log drops messages below the level.
func TestSetLogLevel(t *testing.T) {
	var b strings.Builder
	defer swapLog(&b)()
	defer SetLogLevel(0)
	SetLogLevel(LogInfo)
	Log(LogDebug, "dropped")
	Log(LogInfo, "kept")
	if got, want := b.String(), "warden policy info: kept\n"; got != want {
		t.Fatalf("log %q, want %q", got, want)
	}
}
