// h2spec, the HTTP/2 conformance tool, pinned for cmd/rpcserver's
// TestH2Spec; ./build.sh builds it into bin/h2spec. A module of its own,
// so that the main module never depends on it. h2spec predates modules
// (v2.2.1+incompatible, dep's Gopkg.lock): its dependencies are pinned
// here at the versions the main module already uses, which build it.
module github.com/rpcbench/rpcbench/tools/h2spec

go 1.26.0

tool github.com/summerwind/h2spec/cmd/h2spec

require (
	github.com/fatih/color v1.19.0 // indirect
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/mattn/go-colorable v0.1.14 // indirect
	github.com/mattn/go-isatty v0.0.24 // indirect
	github.com/spf13/cobra v1.10.2 // indirect
	github.com/spf13/pflag v1.0.9 // indirect
	github.com/summerwind/h2spec v2.2.1+incompatible // indirect
	golang.org/x/net v0.60.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.42.0 // indirect
)
