module github.com/rpcbench/rpcbench/adapters/serverkit

go 1.26.0
