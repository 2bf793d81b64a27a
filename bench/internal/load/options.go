// Package load runs one workload against several RPC systems, each server
// in its own process, and reports calls/s, latency, CPU and allocations
// per system. cmd/rpcload is its command line.
package load

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"time"
)

// Options select what a Run measures. Start from DefaultOptions.
type Options struct {
	// Systems are the keys of the systems to run, in row order (see
	// Systems). Empty means the default ones.
	Systems []string
	// G lists the concurrency levels: goroutines sharing one client.
	G []int
	// N is the number of measured calls per row per round. Must be at
	// least 1.
	N int
	// Warmup is the number of calls made, unmeasured, with the same
	// client and concurrency right before each measured phase. Zero skips
	// the warm-up.
	Warmup int
	// Rounds is how many times every row runs, interleaved with the
	// others; the report gives medians over rounds. Must be at least 1.
	Rounds int
	// Workers is rpcserver's -workers. Must be at least 1.
	Workers int
	// RowTimeout bounds one row (warm-up and measured phase). Calls still
	// running when it ends fail and count as non-OK. Must be positive.
	RowTimeout time.Duration

	// RPCServer and BenchPeer are prebuilt binaries; empty means build
	// them with `go build`, which needs the working directory to be in
	// the bench module.
	RPCServer, BenchPeer string
	// CPUProfile, when set, is the path prefix of CPU profiles of the
	// driver's measured phases of the systems in ProfileSystems: one file
	// PREFIX.KEY.gG.rROUND.pprof per row and round.
	CPUProfile     string
	ProfileSystems []string
	// MemoryConns are the counts of idle connections at which the
	// conns-memory measurement (Systems naming KeyConnsMemory) reads a
	// server's RSS, in increasing order, each at least 1.
	MemoryConns []int

	// ServerCPUProfile, when set, is the path prefix of CPU profiles of
	// every rpcserver process over its whole life, warm-ups and every
	// row and round included: one file PREFIX.SERVER.pprof per process,
	// SERVER being "rpcserver", "rpcserver-grpc" (the grpc-bank-rpcserver
	// row's) or the key of a row of debits.
	ServerCPUProfile string

	// Log receives progress lines and server stderr; nil discards.
	Log io.Writer
}

// DefaultOptions returns the settings of a full run: the default systems,
// G 8 and 64, 50000 calls per row per round, 5 rounds: about 75 seconds
// on 2 cores.
func DefaultOptions() Options {
	return Options{
		G:              []int{8, 64},
		N:              50000,
		Warmup:         2000,
		Rounds:         5,
		Workers:        max(8, 4*runtime.NumCPU()),
		RowTimeout:     2 * time.Minute,
		ProfileSystems: []string{KeyRPCBench},
		MemoryConns:    []int{1000, 10000},
	}
}

// ErrOptions is wrapped by every error Validate returns.
var ErrOptions = errors.New("load: invalid options")

// Validate reports the first option that is out of range.
func (o *Options) Validate() error {
	switch {
	case o.N < 1:
		return fmt.Errorf("%w: N %d must be at least 1", ErrOptions, o.N)
	case o.Warmup < 0:
		return fmt.Errorf("%w: Warmup %d must not be negative", ErrOptions, o.Warmup)
	case o.Rounds < 1:
		return fmt.Errorf("%w: Rounds %d must be at least 1", ErrOptions, o.Rounds)
	case o.Workers < 1:
		return fmt.Errorf("%w: Workers %d must be at least 1", ErrOptions, o.Workers)
	case o.RowTimeout <= 0:
		return fmt.Errorf("%w: RowTimeout %v must be positive", ErrOptions, o.RowTimeout)
	case len(o.G) == 0:
		return fmt.Errorf("%w: no G given", ErrOptions)
	}
	for _, g := range o.G {
		if g < 1 {
			return fmt.Errorf("%w: G %d must be at least 1", ErrOptions, g)
		}
	}
	keys, connsMemory := splitMeasurements(o.Systems)
	if _, err := selectSystems(keys); err != nil {
		return err
	}
	if connsMemory {
		if len(o.MemoryConns) == 0 {
			return fmt.Errorf("%w: no MemoryConns given", ErrOptions)
		}
		for i, n := range o.MemoryConns {
			if n < 1 || i > 0 && n <= o.MemoryConns[i-1] {
				return fmt.Errorf("%w: MemoryConns %v must be increasing counts, each at least 1", ErrOptions, o.MemoryConns)
			}
		}
	}
	if _, err := selectSystems(o.ProfileSystems); err != nil && o.CPUProfile != "" {
		return err
	}
	return nil
}
