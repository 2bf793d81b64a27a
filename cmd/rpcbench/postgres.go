package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/rpcbench/rpcbench/internal/cases"
	"github.com/rpcbench/rpcbench/internal/pgcluster"
)

// postgresFor starts the throwaway PostgreSQL cluster the scenarios that
// need one share (or connects through RPCBENCH_PG_DSN), when any of r
// does. Without PostgreSQL binaries, unless RPCBENCH_REQUIRE_PG=1, those
// scenarios are left out and status says why and how to install it; any
// other failure is a set-up error. stop is never nil.
func postgresFor(ctx context.Context, r cases.Registry, status io.Writer) (_ cases.Registry, pg cases.Databases, stop func(), err error) {
	stop = func() {}
	var need, rest cases.Registry
	for _, c := range r {
		if c.Needs == cases.NeedsPostgres {
			need = append(need, c)
		} else {
			rest = append(rest, c)
		}
	}
	if len(need) == 0 {
		return r, nil, stop, nil
	}
	pg, stop, err = startPostgres(ctx, status)
	switch {
	case err == nil:
		return r, pg, stop, nil
	case errors.Is(err, pgcluster.ErrNotFound) && !pgcluster.Required():
		fmt.Fprintf(status, "rpcbench: leaving out %d scenarios that need PostgreSQL: %v\n", len(need), err)
		return rest, nil, stop, nil
	}
	return nil, nil, stop, fmt.Errorf("PostgreSQL for %d scenarios: %w", len(need), err)
}

// startPostgres starts a throwaway PostgreSQL cluster, or connects
// through RPCBENCH_PG_DSN; stop is never nil. Without PostgreSQL binaries
// the error wraps pgcluster.ErrNotFound.
func startPostgres(ctx context.Context, status io.Writer) (pg cases.Databases, stop func(), err error) {
	cl, err := pgcluster.Start(ctx)
	if err != nil {
		return nil, func() {}, err
	}
	return cl, func() {
		if err := cl.Stop(); err != nil {
			fmt.Fprintf(status, "rpcbench: stopping PostgreSQL: %v\n", err)
		}
	}, nil
}
