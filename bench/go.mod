module github.com/rpcbench/rpcbench/bench

go 1.26.0

require github.com/rpcbench/rpcbench v0.0.0

replace github.com/rpcbench/rpcbench => ../
