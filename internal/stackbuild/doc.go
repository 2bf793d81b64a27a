// Package stackbuild turns a client stack at a release, "grpc-go@v1.70.0",
// into an adapter binary linked against that release, built from the
// adapter sources rpcbench embeds and cached on disk.
//
// The main module never links a gRPC library: stackbuild only runs the
// stack's own toolchain (go, npm, python3 -m venv and pip) as child
// processes, each asking its ordinary registry (the Go module proxy,
// npm, PyPI).
//
// A caller parses the reference (Parse, whose errors are ErrUsage),
// asks the registry whether the release exists (Ref.Check:
// ErrNoSuchRelease, ErrNoToolchain), then builds it (Build), which also
// starts the adapter once and checks that its init_ok names that stack
// at that release (ErrProbe) before the build is kept. Matrix lists the
// releases each adapter is known to work with.
//
// A cache directory (DefaultCacheDir, or the caller's) holds one
// directory per reference, each with stackbuild.json, written last,
// saying what it holds:
//
//	grpc-go@v1.70.0/     src/gokit, src/grpcgo (the modules as built, go.mod and go.sum
//	                     requiring the release), adapter-grpcgo
//	connect-go@v1.19.0/  the same with src/connectgo, adapter-connectgo
//	grpc-js@1.10.11/     grpcjs/ (the sources, package.json and package-lock.json for
//	                     the release, node_modules), grpcjs/adapter-grpcjs
//	grpcio@1.70.0/       grpcio/ (the sources), venv/ (grpcio from a PyPI wheel),
//	                     adapter-grpcio (runs grpcio/adapter.py with venv/bin/python)
//	grpcio@1.51.1/       grpcio/ as shipped, grpcio/adapter-grpcio (Debian's
//	                     /usr/bin/python3 and python3-grpcio)
//
// Go's module and build caches, npm's and pip's are the user's own, so
// a second release of a stack builds in seconds.
package stackbuild
