package serverapi_test

import (
	"strings"
	"testing"

	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// TestParseAnnounce: the announce line's address is host:port, as
// rpcserver prints its listener's; a line without one, or without its
// port, is an error, never an address to dial.
func TestParseAnnounce(t *testing.T) {
	tests := []struct {
		line, want, wantErr string
	}{
		{line: serverapi.Announce("127.0.0.1:7070"), want: "127.0.0.1:7070"},
		{line: serverapi.Announce("[::1]:7070"), want: "[::1]:7070"},
		{line: serverapi.Announce("localhost:0"), want: "localhost:0"},
		{line: "RPCSERVER LISTEN", wantErr: `want "RPCSERVER LISTEN "<addr>`},
		{line: serverapi.Announce(""), wantErr: `want "RPCSERVER LISTEN "<addr>`},
		{line: serverapi.Announce(" "), wantErr: "no address"},
		{line: serverapi.Announce("127.0.0.1"), wantErr: "missing port"},
		{line: serverapi.Announce("127.0.0.1:"), wantErr: "no port"},
		{line: serverapi.Announce("127.0.0.1:7070 extra"), wantErr: "not host:port"},
		{line: "LISTEN 127.0.0.1:7070", wantErr: `want "RPCSERVER LISTEN "<addr>`},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			got, err := serverapi.ParseAnnounce(tt.line)
			if tt.wantErr == "" {
				if err != nil || got != tt.want {
					t.Errorf("got %q, %v; want %q, nil", got, err, tt.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.HasPrefix(err.Error(), "serverapi: ") {
				t.Errorf("got %q, %v; want an error \"serverapi: ...%s...\"", got, err, tt.wantErr)
			}
		})
	}
}
