package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/leftover"
	"github.com/rpcbench/rpcbench/internal/pgcluster"
)

// Skipped is a selected system that did not run, and why.
type Skipped struct {
	System string `json:"system"`
	Reason string `json:"reason"`
}

// stores makes a fresh store for each rpcserver of a run that keeps its
// accounts in a database: a SQLite file in the run's directory, or a
// database on one PostgreSQL cluster started for the run. close drops
// the databases and stops the cluster, once the servers are stopped;
// the run's directory, and the SQLite files with it, are removed by Run.
type stores struct {
	dir string
	log io.Writer

	pg  *pgcluster.Cluster // nil until a system needs it
	dbs []string           // the DSNs of the databases made on pg
}

// dropTimeout bounds the DROP DATABASE of one store's database.
const dropTimeout = 30 * time.Second

// startPostgres starts the cluster if any of systems keeps its store in
// PostgreSQL. Without PostgreSQL binaries, and unless pgcluster.Required,
// it returns the systems that can run and the ones left out; any other
// failure is an error.
func (st *stores) startPostgres(ctx context.Context, systems []System) (run []System, skipped []Skipped, err error) {
	need := false
	for _, s := range systems {
		need = need || s.Store == bank.KindPostgres
	}
	if !need {
		return systems, nil, nil
	}
	pg, err := pgcluster.Start(ctx)
	switch {
	case err == nil:
		st.pg = pg
		fmt.Fprintf(st.log, "PostgreSQL cluster started\n")
		dropped, err := pg.Swept()
		leftover.Report(st.log, "rpcload", dropped, err)
		return systems, nil, nil
	case errors.Is(err, pgcluster.ErrNotFound) && !pgcluster.Required():
		reason := fmt.Sprintf("%v (%s=1 makes this an error)", err, pgcluster.EnvRequire)
		for _, s := range systems {
			if s.Store == bank.KindPostgres {
				skipped = append(skipped, Skipped{System: s.Name, Reason: reason})
			} else {
				run = append(run, s)
			}
		}
		return run, skipped, nil
	}
	return nil, nil, fmt.Errorf("load: %w", err)
}

// spec returns the rpcserver -store spec of a fresh store of kind for the
// server named server: empty, the server's default, for memory, and for
// the empty kind of a server that is not rpcserver.
func (st *stores) spec(ctx context.Context, kind, server string) (string, error) {
	switch kind {
	case "", bank.KindMemory:
		return "", nil
	case bank.KindSQLite:
		return "sqlite:" + filepath.Join(st.dir, server+".sqlite"), nil
	case bank.KindPostgres:
		if st.pg == nil {
			return "", errors.New("load: no PostgreSQL cluster started")
		}
		dsn, err := st.pg.NewDatabase(ctx, "rpcload_"+server)
		if err != nil {
			return "", fmt.Errorf("load: %w", err)
		}
		st.dbs = append(st.dbs, dsn)
		return dsn, nil
	}
	return "", fmt.Errorf("load: unknown store kind %q", kind)
}

// close drops the databases made on the cluster, which matters on an
// external server (pgcluster.EnvDSN), and stops the cluster. The servers
// using them must be stopped.
func (st *stores) close() error {
	if st.pg == nil {
		return nil
	}
	var errs []error
	for _, dsn := range st.dbs {
		ctx, cancel := context.WithTimeout(context.Background(), dropTimeout)
		errs = append(errs, st.pg.DropDatabase(ctx, dsn))
		cancel()
	}
	errs = append(errs, st.pg.Stop())
	return errors.Join(errs...)
}
