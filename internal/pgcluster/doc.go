// Package pgcluster provides throwaway PostgreSQL databases, on a server it
// starts for the purpose or on an existing one named by RPCBENCH_PG_DSN.
//
// A server this package starts lives in a fresh temporary directory: its
// data directory, its log and its Unix socket. It binds no TCP port, so any
// number of them can run side by side. Stop shuts it down and removes the
// directory. The server gets SIGQUIT if this process dies; its directory
// and its databases on an external server are named after this process
// (package leftover), so that the next run removes what a killed one
// left. When the process runs as root, initdb and postgres run as the
// user "nobody", since PostgreSQL refuses to run as root.
//
// Environment:
//
//	RPCBENCH_PG_DSN      an existing server to use instead of starting one;
//	                     its user must be allowed to CREATE DATABASE.
//	RPCBENCH_PG_BIN      the directory holding initdb and postgres; when
//	                     unset they are looked up in PATH, then in the
//	                     highest-versioned /usr/lib/postgresql/*/bin.
//	RPCBENCH_REQUIRE_PG  "1" makes a missing PostgreSQL a test failure
//	                     rather than a skip; see Required.
package pgcluster
