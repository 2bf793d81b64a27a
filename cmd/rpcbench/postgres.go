package main

import (
	"context"
	"fmt"
	"io"

	"github.com/rpcbench/rpcbench/internal/leftover"
	"github.com/rpcbench/rpcbench/internal/pgcluster"
	"github.com/rpcbench/rpcbench/internal/scenario"
)

// startPostgres starts a throwaway PostgreSQL cluster, or connects
// through RPCBENCH_PG_DSN, saying on status which databases of killed
// runs it dropped there; stop is never nil. Without PostgreSQL binaries
// the error wraps pgcluster.ErrNotFound.
func startPostgres(ctx context.Context, status io.Writer) (pg scenario.Databases, stop func(), err error) {
	cl, err := pgcluster.Start(ctx)
	if err != nil {
		return nil, func() {}, err
	}
	swept, err := cl.Swept()
	leftover.Report(status, "rpcbench", databases(swept), err)
	return cl, func() {
		if err := cl.Stop(); err != nil {
			fmt.Fprintf(status, "rpcbench: stopping PostgreSQL: %v\n", err)
		}
	}, nil
}

// databases returns "database NAME" for each of names.
func databases(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = "database " + n
	}
	return out
}
