module github.com/rpcbench/rpcbench

go 1.26
