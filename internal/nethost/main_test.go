package nethost

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/rpcbench/rpcbench/internal/testexit"
)

// helperEnv, set in a child's environment, makes the test binary act as a
// helper instead of running tests: "echo" listens on the address in
// helperAddrEnv and echoes lines; "make" makes a host, prints its name
// and waits to be killed.
const (
	helperEnv     = "NETHOST_TEST_HELPER"
	helperAddrEnv = "NETHOST_TEST_ADDR"
)

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "echo":
		os.Exit(echo(os.Getenv(helperAddrEnv)))
	case "make":
		h, err := New()
		if err != nil {
			fmt.Println("ERROR", err)
			os.Exit(1)
		}
		fmt.Println(h.Name)
		select {}
	}
	testexit.Exit(m.Run())
}

// echo listens on addr, prints the bound address, and echoes each line
// back on every connection.
func echo(addr string) int {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Println("ERROR", err)
		return 1
	}
	fmt.Println(ln.Addr())
	for {
		c, err := ln.Accept()
		if err != nil {
			return 1
		}
		go func() {
			defer c.Close()
			r := bufio.NewReader(c)
			for {
				line, err := r.ReadString('\n')
				if err != nil {
					return
				}
				if _, err := io.WriteString(c, line); err != nil {
					return
				}
			}
		}()
	}
}

// needHosts skips the test when hosts cannot be made here, unless
// RPCBENCH_REQUIRE_NETNS=1 says they must.
func needHosts(t *testing.T) {
	t.Helper()
	if err := Available(); err != nil {
		if Required() {
			t.Fatalf("%v (%s=1)", err, EnvRequire)
		}
		t.Skip(err)
	}
}

// newHost makes a host that is closed when the test ends.
func newHost(t *testing.T) *Host {
	t.Helper()
	h, err := New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := h.Close(); err != nil {
			t.Error(err)
		}
	})
	return h
}

// deadline for reads the tests expect to be answered.
const answerWait = 10 * time.Second
