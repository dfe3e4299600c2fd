package abi_test

import (
	"reflect"
	"testing"

	"github.com/warden-mcp/warden/abi"
)

// TestOutputEncodings checks that any valid protobuf encoding of an output
// decodes to the same value: fields in any order, a repeated singular field
// (last one wins), unknown fields of every wire type skipped, zero values
// written or not, multi-byte varints.
func TestOutputEncodings(t *testing.T) {
	tests := []struct {
		name string
		b    []byte
		m    message
		want message
	}{
		{
			"decision reversed",
			[]byte{0x1a, 0x01, 'r', 0x10, 0x02, 0x0a, 0x01, 'n'},
			&abi.ServerDecision{}, &abi.ServerDecision{Name: "n", Action: abi.ServerHide, Reason: "r"},
		},
		{
			"duplicate: last wins",
			[]byte{0x0a, 0x01, 'a', 0x10, 0x01, 0x0a, 0x01, 'b', 0x10, 0x02},
			&abi.ServerDecision{}, &abi.ServerDecision{Name: "b", Action: abi.ServerHide},
		},
		{
			"zero values written",
			[]byte{0x0a, 0x00, 0x10, 0x00, 0x1a, 0x00},
			&abi.ServerDecision{}, &abi.ServerDecision{},
		},
		{
			"unknown fields of every wire type",
			[]byte{
				0x50, 0x96, 0x01, // field 10 varint 150
				0x0a, 0x01, 'n', // name
				0x59, 1, 2, 3, 4, 5, 6, 7, 8, // field 11 fixed64
				0x62, 0x02, 'z', 'z', // field 12 bytes
				0x6d, 1, 2, 3, 4, // field 13 fixed32
				0xf8, 0xff, 0xff, 0xff, 0x0f, 0x00, // field 2^29-1 varint 0
				0x22, 0x01, 't', // allow_tools
			},
			&abi.ServerDecision{}, &abi.ServerDecision{Name: "n", AllowTools: []string{"t"}},
		},
		{
			"tool lists split around other fields",
			[]byte{0x22, 0x01, 'a', 0x0a, 0x01, 's', 0x22, 0x01, 'b', 0x2a, 0x00},
			&abi.ServerDecision{}, &abi.ServerDecision{Name: "s", AllowTools: []string{"a", "b"}, DenyTools: []string{""}},
		},
		{
			"non-canonical bool and long varint",
			[]byte{0x18, 0x02, 0x08, 0x81, 0x00},
			&abi.ToolCallOutput{}, &abi.ToolCallOutput{Rewrite: true, Action: abi.ToolCallDeny},
		},
		{
			"error between decisions",
			[]byte{0x0a, 0x02, 0x10, 0x01, 0x7a, 0x01, 'e', 0x0a, 0x02, 0x10, 0x02},
			&abi.ServersOutput{}, &abi.ServersOutput{Decisions: []abi.ServerDecision{{Action: abi.ServerDisable}, {Action: abi.ServerHide}}, Error: "e"},
		},
		{
			"two errors: last wins",
			[]byte{0x7a, 0x01, 'a', 0x7a, 0x01, 'b'},
			&abi.CredentialsOutput{}, &abi.CredentialsOutput{Error: "b"},
		},
		{
			"one-byte message",
			[]byte{0x00},
			&abi.ServerDecision{}, nil, // error: field number 0
		},
		{
			"tool call empty arguments is nil",
			[]byte{0x12, 0x01, 'r', 0x22, 0x00},
			&abi.ToolCallOutput{}, &abi.ToolCallOutput{Reason: "r"},
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
