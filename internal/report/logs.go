package report

import (
	"fmt"
	"strconv"
	"strings"
)

// The files a scenario called name leaves in an evidence directory's
// logs/ (LogsDir). Each name is spelled here only: scenarios write them,
// the report page and -v read them.

// ServerLog is the log of the n-th server (from 1) a scenario starts:
// server-NAME.log, then server-NAME-2.log, ...
func ServerLog(name string, n int) string {
	if n <= 1 {
		return serverPrefix + name + logSuffix
	}
	return fmt.Sprintf("%s%s-%d%s", serverPrefix, name, n, logSuffix)
}

// ServerLogNumber is the n of ServerLog(name, n) when file is one of
// name's server logs, and 0 when it is not.
func ServerLogNumber(file, name string) int {
	rest, ok := strings.CutPrefix(file, serverPrefix+name)
	if !ok {
		return 0
	}
	if rest == logSuffix {
		return 1
	}
	num, ok := strings.CutSuffix(strings.TrimPrefix(rest, "-"), logSuffix)
	if !ok || !strings.HasPrefix(rest, "-") {
		return 0
	}
	if n, err := strconv.Atoi(num); err == nil && n >= 2 && strconv.Itoa(n) == num {
		return n
	}
	return 0
}

// TraceLog is the file of a scenario's client attempts (package trace).
func TraceLog(name string) string { return tracePrefix + name + ".jsonl" }

// AdapterLog is the stderr of the client adapter a scenario drives.
func AdapterLog(name string) string { return adapterPrefix + name + logSuffix }

// SUTLog is the stderr of the server adapter a scenario drives, and
// SUTRecord the lines it wrote on its protocol's record.
func SUTLog(name string) string { return sutPrefix + name + logSuffix }

// SUTRecord: see SUTLog.
func SUTRecord(name string) string { return sutPrefix + name + ".jsonl" }

// ProxyLog is what rpcbench's fault proxy saw of a scenario's calls:
// every attempt, and how each logical call was judged.
func ProxyLog(name string) string { return proxyPrefix + name + logSuffix }

// LogCase returns the scenario a file of logs/ belongs to, "" when its
// name is none of those above. A scenario's name is snake_case, so it
// ends at the first '-' or '.' after the file's prefix.
func LogCase(file string) string {
	rest := file
	for _, p := range []string{serverPrefix, tracePrefix, adapterPrefix, sutPrefix, proxyPrefix} {
		if r, ok := strings.CutPrefix(file, p); ok {
			rest = r
			break
		}
	}
	i := strings.IndexAny(rest, "-.")
	if i <= 0 {
		return ""
	}
	return rest[:i]
}

// NoServerNote is the note a scenario that started no server leaves in
// place of a server log.
func NoServerNote(name string) string { return serverPrefix + name + ".no-server.txt" }

// ChaosNote is the note a chaos scenario leaves: its schedule and
// checks, the history and server logs being kept out of the evidence.
func ChaosNote(name string) string { return name + ".chaos.txt" }

const (
	serverPrefix  = "server-"
	tracePrefix   = "trace-"
	adapterPrefix = "adapter-"
	sutPrefix     = "sut-"
	proxyPrefix   = "proxy-"
	logSuffix     = ".log"
)
