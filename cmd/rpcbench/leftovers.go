package main

import (
	"io"

	"github.com/rpcbench/rpcbench/internal/leftover"
)

// sweepLeftovers removes the temporary directories that runs killed
// before they could remove them left (package leftover), saying on status
// in one line what it removed. Commands that make temporary directories
// or a PostgreSQL cluster run it first.
func sweepLeftovers(status io.Writer) {
	removed, err := leftover.Sweep("")
	leftover.Report(status, "rpcbench", removed, err)
}
