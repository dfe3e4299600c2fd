package netguard

import "testing"

func TestValidBearer(t *testing.T) {
	tests := []struct {
		header, token string
		want          bool
	}{
		{"Bearer s3cret", "s3cret", true},
		{"bearer s3cret", "s3cret", true},
		{"Bearer  s3cret ", "s3cret", true},
		{"Bearer s3cre", "s3cret", false},
		{"Bearer s3cretX", "s3cret", false},
		{"Basic s3cret", "s3cret", false},
		{"s3cret", "s3cret", false},
		{"", "s3cret", false},
	}
	for _, tt := range tests {
		t.Run(tt.header, func(t *testing.T) {
			if got := ValidBearer(tt.header, tt.token); got != tt.want {
				t.Fatalf("ValidBearer(%q) = %v, want %v", tt.header, got, tt.want)
			}
		})
	}
}

func TestLoopback(t *testing.T) {
	tests := []struct {
		hostport string
		want     bool
	}{
		{"127.0.0.1:80", true},
		{"127.1.2.3:80", true},
		{"[::1]:80", true},
		{"localhost:80", true},
		{"LOCALHOST", true},
		{"::1", true},
		{"10.0.0.1:80", false},
		{"example.com:80", false},
		{"0.0.0.0:80", false},
		{"", false},
	}
	for _, tt := range tests {
		t.Run(tt.hostport, func(t *testing.T) {
			if got := IsLoopbackHost(HostOnly(tt.hostport)); got != tt.want {
				t.Fatalf("IsLoopbackHost(HostOnly(%q)) = %v, want %v", tt.hostport, got, tt.want)
			}
		})
	}
}
