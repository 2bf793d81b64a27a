//go:build !unix

package report

import (
	"fmt"
	"os"
)

// lockDir creates path; without flock, two runs are not kept apart.
func lockDir(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("report: evidence: %w", err)
	}
	return f, nil
}
