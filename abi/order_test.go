package abi_test

import (
	"reflect"
	"testing"

	"github.com/warden-mcp/warden/abi"
)

// TestAnyFieldOrder checks that the fast path (fields in order) and the
// general path (anything else) decode to the same value, including protobuf
// merge semantics for repeated singular fields.
func TestAnyFieldOrder(t *testing.T) {
	tests := []struct {
		name string
		b    []byte
		m    message
		want message
	}{
		{
			"credential reversed",
			[]byte{0x12, 0x01, 'n', 0x0a, 0x01, 'k'},
			&abi.Credential{}, &abi.Credential{Kind: "k", Name: "n"},
		},
		{
			"credential duplicate: last wins",
			[]byte{0x0a, 0x01, 'a', 0x12, 0x01, 'n', 0x0a, 0x01, 'b'},
			&abi.Credential{}, &abi.Credential{Kind: "b", Name: "n"},
		},
		{
			"compact form: zero values omitted",
			[]byte{0x0a, 0x01, 's', 0x22, 0x04, 'h', 't', 't', 'p', 0x50, 0x01},
			&abi.Server{}, &abi.Server{Name: "s", Transport: "http", Enabled: true},
		},
		{
			"args split around other fields",
			[]byte{0x3a, 0x01, 'a', 0x0a, 0x01, 's', 0x3a, 0x01, 'b'},
			&abi.Server{}, &abi.Server{Name: "s", Args: []string{"a", "b"}},
		},
		{
			"non-canonical bool and long varint",
			[]byte{0x10, 0x02, 0x18, 0x81, 0x00},
			&abi.Environment{}, &abi.Environment{Local: true, Connected: true},
		},
		{
			"thread twice is merged",
			[]byte{0x0a, 0x05, 0x1a, 0x03, 0x0a, 0x01, 'r', 0x0a, 0x03, 0x12, 0x01, 'k', 0x0a, 0x05, 0x1a, 0x03, 0x0a, 0x01, 'q'},
			&abi.ServersInput{}, &abi.ServersInput{Thread: abi.Thread{Kind: "k", Roots: []abi.Root{{ID: "r"}, {ID: "q"}}}},
		},
		{
			"one-byte message",
			[]byte{0x00},
			&abi.Root{}, nil, // error: field number 0
		},
		{
			"tool call empty arguments is nil",
			[]byte{0x22, 0x01, 't', 0x2a, 0x00},
			&abi.ToolCallInput{}, &abi.ToolCallInput{Tool: "t"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.m.Unmarshal(tc.b)
			if tc.want == nil {
				if err == nil {
					t.Fatalf("decoded %+v, want an error", tc.m)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(normalize(tc.m), normalize(tc.want)) {
				t.Fatalf("got %+v\nwant %+v", tc.m, tc.want)
			}
		})
	}
}
