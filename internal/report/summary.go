package report

import "fmt"

// Tally counts the passed and failed lines.
func Tally(lines []Line) (passed, failed int) {
	for _, l := range lines {
		if l.Pass {
			passed++
		} else {
			failed++
		}
	}
	return passed, failed
}

// Summary returns the line that ends an output.txt, exactly
// "N passed, M failed".
func Summary(lines []Line) string {
	passed, failed := Tally(lines)
	return fmt.Sprintf("%d passed, %d failed", passed, failed)
}
