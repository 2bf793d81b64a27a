// Command benchpeer is the server side of rpcload's comparison systems,
// one per process:
//
//	benchpeer -kind grpc|grpc-bank|drpc|netrpc|raw|raw-get [-addr 127.0.0.1:0]
//
// Once it is listening it prints one line to stdout,
//
//	LISTEN 127.0.0.1:41234
//
// and serves until SIGTERM or SIGINT. grpc, drpc and netrpc answer the
// workload's get as rpcserver does; grpc-bank serves the Bank gRPC
// service's Get on internal/bank's handler, as rpcserver -grpc does; raw
// echoes frames (the floor); raw-get answers each raw frame with the
// bank's get, the floor plus exactly the handler's work (the floor-get).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/rpcbench/rpcbench/bench/internal/drpcpeer"
	"github.com/rpcbench/rpcbench/bench/internal/grpcbank"
	"github.com/rpcbench/rpcbench/bench/internal/grpcpeer"
	"github.com/rpcbench/rpcbench/bench/internal/netrpcpeer"
	"github.com/rpcbench/rpcbench/bench/internal/rawwire"
	"github.com/rpcbench/rpcbench/bench/internal/workload"
)

// AnnouncePrefix starts the line benchpeer prints once it is listening.
const AnnouncePrefix = "LISTEN "

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// server is what each kind provides: serve ln until stop(ln).
type server struct {
	serve func(ln net.Listener) error
	stop  func(ln net.Listener)
}

func newServer(kind string) (server, error) {
	switch kind {
	case "grpc":
		s := grpcpeer.NewServer()
		return server{serve: s.Serve, stop: func(net.Listener) { s.Stop() }}, nil
	case "grpc-bank":
		s := grpcbank.NewServer()
		return server{serve: s.Serve, stop: func(net.Listener) { s.Stop() }}, nil
	case "drpc":
		s, err := drpcpeer.NewServer()
		if err != nil {
			return server{}, err
		}
		ctx, cancel := context.WithCancel(context.Background())
		return server{
			serve: func(ln net.Listener) error {
				if err := s.Serve(ctx, ln); err != nil {
					return err
				}
				return errors.New("drpc server returned")
			},
			stop: func(net.Listener) { cancel() },
		}, nil
	case "netrpc":
		s, err := netrpcpeer.NewServer()
		if err != nil {
			return server{}, err
		}
		// net/rpc's own Accept logs the listener's close on stop; this
		// loop is the same without the log line.
		return server{
			serve: func(ln net.Listener) error {
				for {
					nc, err := ln.Accept()
					if err != nil {
						return err
					}
					go s.ServeConn(nc)
				}
			},
			stop: func(ln net.Listener) { ln.Close() },
		}, nil
	case "raw":
		var s rawwire.Server
		return server{serve: s.Serve, stop: func(net.Listener) { s.Close() }}, nil
	case "raw-get":
		s := &rawwire.Server{NewHandler: workload.BankGet()}
		return server{serve: s.Serve, stop: func(net.Listener) { s.Close() }}, nil
	}
	return server{}, fmt.Errorf("unknown -kind %q, want grpc, grpc-bank, drpc, netrpc, raw or raw-get", kind)
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("benchpeer", flag.ContinueOnError)
	fs.SetOutput(stderr)
	kind := fs.String("kind", "", "system to serve: grpc, grpc-bank, drpc, netrpc, raw or raw-get")
	addr := fs.String("addr", "127.0.0.1:0", "address to listen on; port 0 picks a free port")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "benchpeer: unexpected arguments %q\n", fs.Args())
		return 2
	}
	srv, err := newServer(*kind)
	if err != nil {
		fmt.Fprintf(stderr, "benchpeer: %v\n", err)
		return 2
	}

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(stderr, "benchpeer: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "%s%s\n", AnnouncePrefix, ln.Addr())

	errc := make(chan error, 1)
	go func() { errc <- srv.serve(ln) }()
	select {
	case <-sigs:
		srv.stop(ln)
		return 0
	case err := <-errc:
		fmt.Fprintf(stderr, "benchpeer: %s server stopped: %v\n", *kind, err)
		return 1
	}
}
