package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// scorecardRun is a grpc group run of the reference and two stacks.
const scorecardRun = `CASE a_rpcbench PASS scenario=a stack=rpcbench config=client exec_at_most_once:=holds
CASE a_grpcgo_default PASS scenario=a stack=grpc-go config=default version=1.85.0 exec_at_most_once:=violated
CASE a_grpcgo_retry PASS scenario=a stack=grpc-go config=retry version=1.85.0 exec_at_most_once:=holds
CASE a_grpcjs_default PASS scenario=a stack=grpc-js config=default version=1.14.7 exec_at_most_once:=holds
CASE s_rpcserver PASS scenario=s stack=rpcserver config=server srv_expired_not_executed:=holds
CASE s_grpcjs PASS scenario=s stack=grpc-js config=server version=1.14.7 srv_expired_not_executed:=violated
6 passed, 0 failed
`

// TestScorecardSelect: --stack and --config keep the named stacks and
// configurations beside the reference, repeated or as a list; a name the
// evidence does not hold is a usage error listing those it does, before
// anything is written.
func TestScorecardSelect(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		code      int
		want, not []string
	}{
		{"all", nil, exitOK, []string{"grpc-go 1.85.0\n", "grpc-js 1.14.7\n", "Servers"}, nil},
		{"one stack", []string{"--stack", "grpc-js"}, exitOK, []string{"grpc-js 1.14.7\n", "rpcbench", "Servers", "rpcserver"}, []string{"grpc-go"}},
		{"a list", []string{"--stack", "grpc-js,grpc-go", "--config", "retry", "--config", "server"}, exitOK, []string{"grpc-go 1.85.0\n", "retry", "Servers", "grpc-js"}, []string{"grpc-js 1.14.7\n", "  default"}},
		{"unknown stack", []string{"--stack", "grpc-gp"}, exitError, []string{`--stack "grpc-gp": the evidence holds no such stack`, "valid stacks: grpc-go, grpc-js\n"}, nil},
		{"the reference", []string{"--stack", "rpcbench"}, exitError, []string{"rpcbench is a reference", "valid stacks: grpc-go, grpc-js\n"}, nil},
		{"unknown config", []string{"--config", "retry,nope", "--json", "card.json"}, exitError, []string{`--config "nope"`, "valid configurations: default, retry, server\n"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, stdout, _ := testApp(t)
			writeTree(t, map[string]string{"evidence/grpc/output.txt": scorecardRun})
			code, errText := command(a, append([]string{"scorecard"}, tt.args...)...)
			if code != tt.code {
				t.Fatalf("exit code %d, want %d; stderr %s", code, tt.code, errText)
			}
			got := stdout.String() + errText
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("output lacks %q:\n%s", w, got)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(stdout.String(), n) {
					t.Errorf("stdout holds %q:\n%s", n, stdout.String())
				}
			}
			if tt.code != exitOK {
				if stdout.Len() > 0 {
					t.Errorf("stdout %q, want nothing", stdout.String())
				}
				left, _ := filepath.Glob(".*tmp*")
				if _, err := os.Stat("card.json"); err == nil {
					left = append(left, "card.json")
				}
				if len(left) > 0 {
					t.Errorf("left behind %v", left)
				}
			}
		})
	}
}
