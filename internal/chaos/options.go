// Package chaos runs rpcbench's chaos mode: many clients run a random
// workload against rpcserver processes while a nemesis injects faults on
// a schedule drawn from a seed; every operation is recorded with its
// outcome (ok, failed or unknown), and checkers decide whether the whole
// history could have happened on a correct system: each account
// linearizable, each key executed at most once and every acknowledged
// keyed debit exactly once, and no answer handed to the wrong call.
package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Client policies.
const (
	// ClientNormal is the project's client with its default rules.
	ClientNormal = "normal"
	// ClientNaive re-sends any call whose outcome is unknown, keyless
	// debits included: the negative control.
	ClientNaive = "naive"
)

// Stores.
const (
	StoreMemory   = "memory"
	StoreSQLite   = "sqlite"
	StorePostgres = "postgres"
)

// Databases hands out PostgreSQL databases.
type Databases interface {
	NewDatabase(ctx context.Context, prefix string) (string, error)
	DropDatabase(ctx context.Context, dsn string) error
}

// Options are one chaos run's settings.
type Options struct {
	Seed     int64
	Duration time.Duration
	Clients  int
	Accounts int
	Store    string
	Servers  int
	// Faults are the nemesis kinds the schedule draws from.
	Faults []string
	// Client is ClientNormal or ClientNaive.
	Client string
	// Out is the directory for the history, the schedule, the server
	// logs and, on FAIL, the visualization.
	Out       string
	ServerBin string
	// Postgres is required for StorePostgres.
	Postgres Databases
	// Progress receives the schedule and progress lines; nil discards.
	Progress io.Writer
	// CheckTimeout bounds the linearizability check.
	CheckTimeout time.Duration

	// wrap, set by tests, replaces each client with a broken variant.
	wrap func(caller) caller
}

// DefaultOptions returns the defaults: seed 1, 10s, 8 clients, 4
// accounts, the in-memory store on one server, every fault that store
// can survive (no kills, drains or rolling restarts: a restarted
// in-memory server forgets everything), the normal client.
func DefaultOptions() Options {
	return Options{
		Seed: 1, Duration: 10 * time.Second, Clients: 8, Accounts: 4,
		Store: StoreMemory, Servers: 1, Faults: DefaultFaults(StoreMemory),
		Client: ClientNormal, CheckTimeout: 20 * time.Second,
	}
}

// DefaultFaults returns the faults a store is run with by default: all of
// them ("all": NemLie left out), but those that restart a server for the
// in-memory store.
func DefaultFaults(store string) []string {
	if store == StoreMemory {
		return slices.DeleteFunc(honestKinds(), func(k string) bool { return slices.Contains(restarts, k) })
	}
	return honestKinds()
}

// ErrOptions is wrapped by Validate's errors.
var ErrOptions = errors.New("chaos: invalid options")

// Validate reports the first option out of range.
func (o *Options) Validate() error {
	switch {
	case o.Duration < time.Second:
		return fmt.Errorf("%w: duration %v must be at least 1s", ErrOptions, o.Duration)
	case o.Clients < 1 || o.Clients > 256:
		return fmt.Errorf("%w: clients %d must be in [1,256]", ErrOptions, o.Clients)
	case o.Accounts < 1 || o.Accounts > 1000:
		return fmt.Errorf("%w: accounts %d must be in [1,1000]", ErrOptions, o.Accounts)
	case o.Servers < 1 || o.Servers > 8:
		return fmt.Errorf("%w: servers %d must be in [1,8]", ErrOptions, o.Servers)
	case !slices.Contains([]string{StoreMemory, StoreSQLite, StorePostgres}, o.Store):
		return fmt.Errorf("%w: store %q: want memory, sqlite or postgres", ErrOptions, o.Store)
	case o.Store == StoreMemory && o.Servers > 1:
		return fmt.Errorf("%w: %d servers on the in-memory store would share nothing: use sqlite or postgres", ErrOptions, o.Servers)
	case o.Client != ClientNormal && o.Client != ClientNaive:
		return fmt.Errorf("%w: client %q: want normal or naive", ErrOptions, o.Client)
	case o.Out == "":
		return fmt.Errorf("%w: an output directory is required", ErrOptions)
	case o.CheckTimeout <= 0:
		return fmt.Errorf("%w: check timeout %v must be positive", ErrOptions, o.CheckTimeout)
	}
	for _, f := range o.Faults {
		if !slices.Contains(NemesisKinds, f) {
			return fmt.Errorf("%w: unknown fault %q", ErrOptions, f)
		}
	}
	return nil
}

// ReplayArgs returns the rpcbench chaos arguments that draw this run's
// schedule and workload. Result.ReplayAs adds those that do not: the
// output directory and the check timeout.
func (o Options) ReplayArgs() []string {
	faults := strings.Join(o.Faults, ",")
	if faults == "" {
		faults = "none"
	}
	return []string{
		"--seed", strconv.FormatInt(o.Seed, 10), "--duration", o.Duration.String(),
		"--clients", strconv.Itoa(o.Clients), "--accounts", strconv.Itoa(o.Accounts),
		"--store", o.Store, "--servers", strconv.Itoa(o.Servers),
		"--faults", faults, "--client", o.Client,
	}
}
